import { randomBytes } from 'node:crypto';
import { openStream } from './helpers/sse-client';
import { sessionLinkQuery, sessionPagePath } from './helpers/session-links';
import { auth, createRun, getRun, waitForState, type RunBody } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * A run's transcript is reached only through its signed, expiring `session_link`, never by its
 * id alone: attacked with no signature, another team's key, altered and expired links, and one
 * run's link used for another, on the page and on its event stream.
 */
const TTL = 600;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { SESSION_LINK_TTL_SECONDS: String(TTL) } });
});
afterAll(async () => {
  await ctx?.close();
});

/** A finished run of a new team whose transcript holds `secret`. */
async function finishedRun(secret: string): Promise<{ key: string; run: RunBody }> {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('link');
  ctx.model.script(marker, () => ({ text: `The answer is ${secret}.` }));
  const runId = await createRun(ctx, key, { prompt: `Say it ${marker}` });
  return { key, run: await waitForState(ctx, key, runId, ['SUCCEEDED']) };
}

const page = (path: string, headers: Record<string, string> = {}) => ctx.api.get(path).set(headers);
const stream = (path: string) => openStream(`${ctx.baseUrl}${path}`);

test("each read of a run signs its session_link anew; the link opens the transcript, the run's id alone nothing", async () => {
  const secret = randomBytes(8).toString('hex');
  const { key, run } = await finishedRun(secret);
  const before = Date.now();
  const read = await getRun(ctx, key, run.run_id);
  const after = Date.now();
  const link = new URL(read.session_link as string);
  expect(`${link.origin}${link.pathname}`).toBe(`${ctx.baseUrl}/sessions/${read.session_id as string}`);
  expect([...link.searchParams.keys()]).toEqual(['expires', 'signature']);
  // Signed by this read: it works for SESSION_LINK_TTL_SECONDS from now.
  const expires = Number(link.searchParams.get('expires'));
  expect(expires).toBeGreaterThanOrEqual(Math.ceil(before / 1000) + TTL);
  expect(expires).toBeLessThanOrEqual(Math.ceil(after / 1000) + TTL);

  const opened = await page(sessionPagePath(link));
  expect(opened.status).toBe(200);
  expect(opened.text).toContain(secret);
  // The live stream the page follows carries the page's own signed query.
  expect(opened.text).toContain(
    `data-src="${read.session_id as string}/events?${link.search.slice(1).replace('&', '&amp;')}"`,
  );
  const events = await stream(`${link.pathname}/events${link.search}`);
  expect(events.status).toBe(200);
  await events.waitForEvent((e) => e.event === 'assistant' && e.data.includes(secret));
  events.close();

  // The id alone, with no key, another team's key or this team's own: the same refusal, which
  // says how to get a working link and is the same as for a session that does not exist.
  const { key: otherTeam } = await ctx.newTeamKey();
  const alone = await page(link.pathname);
  expect(alone.status).toBe(403);
  expect(alone.headers['content-type']).toMatch(/^text\/html/);
  expect(alone.headers['cache-control']).toBe('no-store');
  expect(alone.text).toContain('This transcript link is not valid');
  expect(alone.text).toContain('<code>GET /api/v1/agent/runs/{run_id}</code>');
  expect(alone.text).toContain('10 minutes (SESSION_LINK_TTL_SECONDS)');
  for (const answer of [
    await page(link.pathname, auth(otherTeam)),
    await page(link.pathname, auth(key)),
    await page(`/sessions/${randomBytes(24).toString('base64url')}`),
  ]) {
    expect([answer.status, answer.text]).toEqual([403, alone.text]);
  }
  expect(alone.text).not.toContain(secret);
  const bare = await stream(`${link.pathname}/events`);
  expect(bare.status).toBe(403);
  expect(JSON.parse(bare.body)).toMatchObject({ error_code: 'not_authorized' });
  expect(bare.body).not.toContain(secret);
  // Another team cannot read the run, so it never gets a link.
  expect((await ctx.api.get(`/api/v1/agent/runs/${run.run_id}`).set(auth(otherTeam))).status).toBe(404);
});

test("an altered, an expired or another run's link opens neither the page nor its stream, whether or not the session exists", async () => {
  const secretA = randomBytes(8).toString('hex');
  const secretB = randomBytes(8).toString('hex');
  const [{ run: a }, { run: b }] = await Promise.all([finishedRun(secretA), finishedRun(secretB)]);
  const linkA = new URL(a.session_link as string);
  const sessionA = a.session_id as string;
  const query = linkA.searchParams;
  const signature = query.get('signature')!;
  const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
  const unknown = randomBytes(24).toString('base64url');
  // Issued SESSION_LINK_TTL_SECONDS + 1 s ago by the service itself: expired a second ago.
  const expiredAt = Math.floor(Date.now() / 1000) - 1;

  const attacks: { name: string; path: string; reason: RegExp; sameAs?: string }[] = [
    {
      name: 'altered signature',
      path: `/sessions/${sessionA}?expires=${query.get('expires')}&signature=${flipped}`,
      reason: /link is not valid: its signature does not match/,
      sameAs: `/sessions/${unknown}?expires=${query.get('expires')}&signature=${flipped}`,
    },
    {
      name: 'lifetime stretched',
      path: `/sessions/${sessionA}?expires=${Number(query.get('expires')) + 86_400}&signature=${signature}`,
      reason: /link is not valid: its signature does not match/,
    },
    {
      name: 'expired',
      path: `/sessions/${sessionA}?${sessionLinkQuery(ctx, sessionA, expiredAt)}`,
      reason: new RegExp(`link expired at ${new Date(expiredAt * 1000).toISOString()}`),
      sameAs: `/sessions/${unknown}?${sessionLinkQuery(ctx, unknown, expiredAt)}`,
    },
    {
      name: "run A's link on run B",
      path: `/sessions/${b.session_id as string}${linkA.search}`,
      reason: /link is not valid: its signature does not match/,
    },
    { name: 'no expiry', path: `/sessions/${sessionA}?signature=${signature}`, reason: /link is incomplete/ },
  ];
  for (const attack of attacks) {
    const answer = await page(attack.path);
    expect({ attack: attack.name, status: answer.status }).toEqual({ attack: attack.name, status: 403 });
    expect(answer.text).toMatch(attack.reason);
    expect(answer.text).toContain('Get a fresh link by reading the run again');
    expect(answer.text).not.toContain(secretA);
    expect(answer.text).not.toContain(secretB);
    if (attack.sameAs) expect((await page(attack.sameAs)).text).toBe(answer.text);

    const [path, search] = attack.path.split('?');
    const events = await stream(`${path}/events?${search}`);
    expect({ attack: attack.name, status: events.status }).toEqual({ attack: attack.name, status: 403 });
    expect(JSON.parse(events.body)).toMatchObject({
      error_code: 'not_authorized',
      detail: expect.stringMatching(attack.reason),
    });
    expect(events.body).not.toContain(secretA);
  }
  // The same links, unaltered, still open their own pages.
  expect((await page(sessionPagePath(linkA))).text).toContain(secretA);
  expect((await page(sessionPagePath(b.session_link))).text).toContain(secretB);
});
