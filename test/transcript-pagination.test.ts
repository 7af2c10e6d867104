import { SESSION_PAGE_EVENTS } from '../api/routes/session-routes';
import type { RunEventKind, RunEventPayload } from '../core/run-events';
import { appendRunEvent } from '../db/run-events';
import { gate } from './helpers/scripted-model';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

type Action = Record<string, unknown>;
interface ConversationPage {
  runs: { run_id: string }[];
  advertised_skills: unknown[];
  actions: Action[];
  page_info: { has_next_page: boolean; next_cursor?: string };
}
type Entry = { kind: RunEventKind; payload: RunEventPayload };

/** Appends transcript entries straight through the database functions, ten at a time. */
async function appendEvents(runId: string, count: number, entry: (i: number) => Entry) {
  for (let start = 0; start < count; start += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, count - start) }, (_, k) => {
        const { kind, payload } = entry(start + k);
        return appendRunEvent(ctx.dataSource.manager, { runId, eventKey: `test-${start + k}`, kind, turn: 1, payload });
      }),
    );
  }
}

/** Four entries in turn: an agent message, a command, and two that are no actions (a notice, a `read_skill` call). */
function mixedEntry(label: string) {
  return (i: number): Entry => {
    const entries: Entry[] = [
      { kind: 'assistant', payload: { text: `${label} says ${i}`, model_id: 'openai/test-model', tool_calls: [] } },
      {
        kind: 'tool_call',
        payload: {
          tool_call_id: `c${i}`,
          name: 'run_command',
          input: { command: `echo ${i}` },
          output: `${i}`,
          full_output: `${i}\n`,
          is_error: false,
          exit_code: 0,
        },
      },
      { kind: 'notice', payload: { message: `notice ${i}` } },
      {
        kind: 'tool_call',
        payload: { tool_call_id: `s${i}`, name: 'read_skill', input: {}, output: 'skill', is_error: false },
      },
    ];
    return entries[i % 4]!;
  };
}

async function conversation(key: string, conversationId: string, query = '') {
  return ctx.api.get(`/api/v1/agent/conversations/${conversationId}${query}`).set(auth(key));
}

/** Every page at `limit`, following `next_cursor`. */
async function allPages(key: string, conversationId: string, limit: number): Promise<ConversationPage[]> {
  const pages: ConversationPage[] = [];
  let cursor: string | undefined;
  do {
    const query = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await conversation(key, conversationId, query);
    expect(res.status).toBe(200);
    const page = res.body as ConversationPage;
    pages.push(page);
    cursor = page.page_info.next_cursor;
    expect(page.page_info.has_next_page).toBe(cursor !== undefined);
  } while (cursor && pages.length < 100);
  return pages;
}

test('the conversation endpoint pages through its actions in order, pending follow-ups last', async () => {
  const { key } = await ctx.newTeamKey();
  const markerA = uniqueName('conv-a');
  ctx.model.script(markerA, () => ({ text: 'A is done' }));
  const runA = await createRun(ctx, key, { prompt: `First ${markerA}` });
  await waitForState(ctx, key, runA, ['SUCCEEDED']);
  await appendEvents(runA, 40, mixedEntry('A'));
  const conversationId = (await getRun(ctx, key, runA)).conversation_id as string;

  const markerB = uniqueName('conv-b');
  const hold = gate<{ text: string }>();
  ctx.model.script(markerB, (_req, call) => (call === 1 ? { hold: hold.promise } : { text: 'B is done' }));
  const runB = await createRun(ctx, key, { prompt: `Second ${markerB}`, conversation_id: conversationId });
  await ctx.model.waitForCalls(markerB, 1);
  await appendEvents(runB, 12, mixedEntry('B'));
  for (const message of ['one', 'two', 'three']) {
    const res = await ctx.api.post(`/api/v1/agent/runs/${runB}/followups`).set(auth(key)).send({ message });
    expect(res.status).toBe(200);
  }

  const whole = (await conversation(key, conversationId, '?limit=500')).body as ConversationPage;
  expect(whole.page_info).toEqual({ has_next_page: false });
  expect(whole.runs.map((r) => r.run_id)).toEqual([runA, runB]);
  // A: prompt, reply, 10 messages and 10 commands; B: prompt, 3 and 3; then B's pending follow-ups.
  expect(whole.actions.filter((a) => a.run_id === runA)).toHaveLength(22);
  expect(whole.actions).toHaveLength(32);
  expect(whole.actions.map((a) => a.run_id)).toEqual([...Array(22).fill(runA), ...Array(10).fill(runB)]);
  expect(whole.actions.some((a) => a.tool === 'read_skill')).toBe(false);
  expect(whole.actions.slice(-3)).toEqual(
    ['one', 'two', 'three'].map((text) =>
      expect.objectContaining({ run_id: runB, kind: 'user_message', text, followup: true, pending: true }),
    ),
  );
  const byDefault = (await conversation(key, conversationId)).body as ConversationPage;
  expect([byDefault.actions, byDefault.page_info]).toEqual([whole.actions, whole.page_info]);

  for (const limit of [1, 7, 8, 22]) {
    const pages = await allPages(key, conversationId, limit);
    expect(pages).toHaveLength(Math.ceil(32 / limit));
    for (const page of pages.slice(0, -1)) expect(page.actions).toHaveLength(limit);
    expect(pages.flatMap((p) => p.actions)).toEqual(whole.actions);
    for (const page of pages) {
      expect(page.runs.map((r) => r.run_id)).toEqual([runA, runB]);
      expect(page.advertised_skills).toEqual(whole.advertised_skills);
    }
    // Pending follow-ups count towards the limit: with room for all three, they are on the last page only.
    if (limit >= 3) expect(pages.slice(0, -1).some((p) => p.actions.some((a) => a.pending))).toBe(false);
  }

  const markerC = uniqueName('conv-c');
  ctx.model.script(markerC, () => ({ text: 'C is done' }));
  const runC = await createRun(ctx, key, { prompt: `Elsewhere ${markerC}` });
  const other = await waitForState(ctx, key, runC, ['SUCCEEDED']);
  const otherCursor = ((await conversation(key, other.conversation_id as string, '?limit=1')).body as ConversationPage)
    .page_info.next_cursor!;
  const firstCursor = ((await conversation(key, conversationId, '?limit=1')).body as ConversationPage).page_info
    .next_cursor!;

  const bad: [string, string][] = [
    ['?limit=0', 'Query parameter `limit` must be an integer from 1 to 500 (got "0").'],
    ['?limit=501', 'Query parameter `limit` must be an integer from 1 to 500 (got "501").'],
    ['?limit=ten', 'Query parameter `limit` must be an integer from 1 to 500 (got "ten").'],
    ['?limit=1&limit=2', 'Query parameter `limit` may be given only once.'],
    ['?cursor=nope', 'Query parameter `cursor` is not a cursor this service issued'],
    [`?cursor=${Buffer.from('{}').toString('base64url')}`, 'is not a cursor this service issued'],
    [`?cursor=${encodeURIComponent(otherCursor)}`, 'Query parameter `cursor` was issued for another conversation'],
    ['?page=2', 'Unknown query parameter `page`.'],
  ];
  for (const [query, detail] of bad) {
    const res = await conversation(key, conversationId, query);
    expect([query, res.status, res.body.error_code]).toEqual([query, 400, 'invalid_request']);
    expect(res.body.detail).toContain(detail);
  }

  const stranger = await ctx.newTeamKey();
  expect((await conversation(stranger.key, conversationId)).status).toBe(404);
  expect((await conversation(stranger.key, conversationId, `?cursor=${encodeURIComponent(firstCursor)}`)).status).toBe(
    404,
  );

  hold.release({ text: 'B first' });
  await waitForState(ctx, key, runB, ['SUCCEEDED']);
  const after = ((await conversation(key, conversationId, '?limit=500')).body as ConversationPage).actions;
  expect(after.some((a) => a.pending)).toBe(false);
  expect(after.filter((a) => a.followup).map((a) => a.text)).toEqual(['one', 'two', 'three']);
});

const eventIds = (html: string) => [...html.matchAll(/<section [^>]*id="event-(\d+)"/g)].map((m) => m[1]!);
const links = (html: string) =>
  Object.fromEntries(
    [...html.matchAll(/<a href="([^"]*)" rel="(\w+)">/g)].map((m) => [m[2]!, m[1]!.replaceAll('&amp;', '&')]),
  );

test('the transcript page shows a bounded page of events, the newest first, with links to the others', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('long-transcript');
  const hold = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: hold.promise } : { text: 'finished' }));
  const runId = await createRun(ctx, key, { prompt: `Go on for long ${marker}` });
  const run = await waitForState(ctx, key, runId, ['INPROGRESS']);
  await ctx.model.waitForCalls(marker, 1);
  await appendEvents(runId, 2 * SESSION_PAGE_EVENTS + 150, (i) => ({
    kind: 'notice',
    payload: { message: `line ${i}` },
  }));
  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'waiting here' });
  expect(followup.status).toBe(200);
  const stored = (
    (await ctx.dataSource.query(`SELECT id FROM run_events WHERE run_id = $1 ORDER BY id`, [runId])) as { id: string }[]
  ).map((r) => r.id);
  const pageUrl = new URL(run.session_link as string);
  const open = async (href: string) => {
    const res = await ctx.api.get(new URL(href, pageUrl).pathname + new URL(href, pageUrl).search);
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'",
    );
    expect(res.headers['cache-control']).toBe('no-store');
    return res.text;
  };

  const newest = await open(pageUrl.pathname + pageUrl.search);
  expect(eventIds(newest)).toEqual(stored.slice(-SESSION_PAGE_EVENTS));
  // It follows the live run: its script reads the session's event stream after its last event.
  expect(newest).toContain('<script src="live.js" defer>');
  expect(newest).toContain(`data-after="${stored[stored.length - 1]}"`);
  expect(newest).toContain('id="live"');
  expect(newest).toContain('data-kind="pending_followup"');
  expect(Object.keys(links(newest)).sort()).toEqual(['first', 'prev']);

  const backwards = [eventIds(newest)];
  let html = newest;
  while (links(html).prev) {
    html = await open(links(html).prev!);
    backwards.unshift(eventIds(html));
    expect(html).not.toContain('live.js');
    expect(html).not.toContain('pending_followup');
    expect(links(html)).toMatchObject({ next: expect.any(String), last: expect.any(String) });
  }
  expect(backwards.map((ids) => ids.length)).toEqual([
    stored.length - 2 * SESSION_PAGE_EVENTS,
    SESSION_PAGE_EVENTS,
    SESSION_PAGE_EVENTS,
  ]);
  expect(backwards.flat()).toEqual(stored);
  expect(html).toContain(`Go on for long ${marker}`);
  expect(links(html).first).toBeUndefined();
  expect(eventIds(await open(links(html).last!))).toEqual(eventIds(newest));

  const forwards: string[][] = [];
  html = await open(links(newest).first!);
  forwards.push(eventIds(html));
  while (links(html).next) {
    html = await open(links(html).next!);
    forwards.push(eventIds(html));
  }
  expect(forwards.map((ids) => ids.length)).toEqual([
    SESSION_PAGE_EVENTS,
    SESSION_PAGE_EVENTS,
    stored.length - 2 * SESSION_PAGE_EVENTS,
  ]);
  expect(forwards.flat()).toEqual(stored);
  // The last page forwards ends with the newest events too: it follows the live run.
  expect(html).toContain('live.js');
  expect(html).toContain(`data-after="${stored[stored.length - 1]}"`);
  expect(html).toContain('data-kind="pending_followup"');

  // Every link between the pages carries the page's own signed query (and no other).
  for (const href of Object.values(links(newest))) expect(href.endsWith(pageUrl.search.slice(1))).toBe(true);
  for (const query of ['?after=x', '?before=-1', '?after=1&before=2', '?after=1&after=2']) {
    const res = await ctx.api.get(`${pageUrl.pathname}${query}&${pageUrl.search.slice(1)}`);
    expect([query, res.status]).toEqual([query, 400]);
    expect(res.body.detail).toMatch(/`after`|`before`/);
  }
  expect((await ctx.api.get(`${pageUrl.pathname}${pageUrl.search}&utm_source=chat`)).status).toBe(200);

  hold.release({ text: 'first' });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const done = await open(pageUrl.pathname + pageUrl.search);
  // Ended: no longer marked live (its script still follows a follow-up within the idle window).
  expect(done).not.toContain('id="live"');
  expect(done).not.toContain('pending_followup');
  expect(done).toContain('finished');
});
