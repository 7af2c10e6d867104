import { newUuidV7 } from '../core/ids';
import { createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** The clients' redirect checks: no key, unknown ids are 404, and the ids they answer open nothing by themselves. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

test('a session redirects to its conversation and a conversation to its latest session, without a key', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('redirect');
  ctx.model.script(marker, () => ({ text: 'ok' }));
  const first = await createRun(ctx, key, { prompt: `First ${marker}` });
  await waitForState(ctx, key, first, ['SUCCEEDED']);
  const run = await getRun(ctx, key, first);
  const second = await createRun(ctx, key, { prompt: `Second ${marker}`, conversation_id: run.conversation_id });
  const latest = await waitForState(ctx, key, second, ['SUCCEEDED']);

  const bySession = await ctx.api.get(`/api/v1/agent/sessions/${run.session_id as string}/redirect`);
  expect(bySession.status).toBe(200);
  expect(bySession.body).toEqual({ conversation_id: run.conversation_id });
  const byConversation = await ctx.api.get(`/api/v1/agent/conversations/${run.conversation_id as string}/redirect`);
  expect(byConversation.status).toBe(200);
  expect(byConversation.body).toEqual({ session_id: latest.session_id });
  // What a redirect answers is an id, and an id alone shows no transcript: that needs the signed
  // session_link, which only a read of the run with its team's key gives.
  for (const sessionId of [run.session_id, latest.session_id] as string[]) {
    const page = await ctx.api.get(`/sessions/${sessionId}`);
    expect(page.status).toBe(403);
    expect(page.text).not.toContain(marker);
    const events = await ctx.api.get(`/sessions/${sessionId}/events`);
    expect([events.status, events.body.error_code]).toEqual([403, 'not_authorized']);
    expect(events.text).not.toContain(marker);
  }

  for (const path of [
    `/api/v1/agent/sessions/${'A'.repeat(32)}/redirect`,
    '/api/v1/agent/sessions/not-a-session/redirect',
    `/api/v1/agent/conversations/${newUuidV7()}/redirect`,
    '/api/v1/agent/conversations/nope/redirect',
  ]) {
    const res = await ctx.api.get(path);
    expect({ path, status: res.status, code: res.body.error_code }).toEqual({
      path,
      status: 404,
      code: 'resource_not_found',
    });
  }
  // The conversation itself still needs a key.
  expect((await ctx.api.get(`/api/v1/agent/conversations/${run.conversation_id as string}`)).status).toBe(401);
});
