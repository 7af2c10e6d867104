/**
 * A run's pull request kept current from the forge, against the test run's real Gitea: its
 * signed webhook to the service's forge-webhooks endpoint, and a poll where none is set up. The
 * run's row is written as the delivery writes it (test/helpers/pull-requests.ts).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { parseRepositoryUrl } from '../core/git-forges';
import { forgeFor } from '../services/pull-requests/forges/forges';
import { createPullRequestPoll } from '../services/pull-requests/pull-request-poll';
import { createRepository, giteaApi, pushBranch, sharedGitea } from './helpers/gitea';
import { recordDeliveredPullRequest } from './helpers/pull-requests';
import { auth, createRun, getRun, waitForState, type RunBody } from './helpers/runs';
import { createLogger } from '../core/logger';
import { SecretDecryptionError } from '../core/secrets';
import { openStream } from './helpers/sse-client';
import { createTestContext, waitFor, type TestContext } from './helpers/test-context';
import { warpClientCalls } from './helpers/warp-client';
import { WebhookReceiver } from './helpers/webhook-receiver';
import type { SharedGitea } from './stack/on-demand-servers';

jest.setTimeout(600_000);

const SECRET = `forge-secret-${randomBytes(12).toString('hex')}`;
let ctx: TestContext;
let key: string;
let gitea: SharedGitea;
let giteaHost: string;
/** The team's webhook of the default event types, and one subscribed to pull request changes only. */
const receiver = new WebhookReceiver();
const changes = new WebhookReceiver();
let defaultHookId: string;

beforeAll(async () => {
  gitea = await sharedGitea();
  giteaHost = parseRepositoryUrl(`${gitea.url}/o/r`)!.host;
  ctx = await createTestContext({
    env: {
      FORGE_WEBHOOK_SECRETS: `${giteaHost}=${SECRET}`,
      GIT_FORGES: `${giteaHost}=gitea`,
      OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
    },
  });
  ({ key } = await ctx.newTeamKey('personal', undefined, 'admin'));
  const hook = await ctx.api
    .post('/api/v1/agent/webhooks')
    .set(auth(key))
    .send({ url: await receiver.start() });
  expect(hook.status).toBe(201);
  defaultHookId = hook.body.id as string;
  const changesHook = await ctx.api
    .post('/api/v1/agent/webhooks')
    .set(auth(key))
    .send({ url: await changes.start(), event_types: ['run.pull_request_changed'] });
  expect(changesHook.body).toMatchObject({ event_types: ['run.pull_request_changed'] });
});
afterAll(async () => {
  await receiver.stop();
  await changes.stop();
  await ctx?.close();
});

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** A finished run with a pull request opened on Gitea for it, recorded as the delivery records it. */
async function runWithPullRequest() {
  const runId = await createRun(ctx, key, { prompt: 'deliver a change' });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const repository = await createRepository(gitea, unique('prstatus'));
  const branch = `agent-runs/${runId}`;
  await pushBranch(gitea, repository, branch, { name: 'change.txt', content: 'the agent was here\n' });
  const forge = forgeFor({ [giteaHost]: 'gitea' }, { origin: gitea.url, host: giteaHost }, gitea.token);
  const opened = await forge.open(repository, {
    title: 'A change',
    body: '',
    base: 'main',
    head: branch,
    draft: false,
  });
  const repositoryUrl = `${gitea.url}/${repository.owner}/${repository.name}`;
  const artifactUid = await recordDeliveredPullRequest(ctx.dataSource, {
    runId,
    repositoryUrl,
    forge: 'gitea',
    branch,
    base: 'main',
    number: opened.number,
    url: opened.url,
    status: 'open',
  });
  return { runId, repository, repositoryUrl, opened, artifactUid, branch };
}

const pullRequestOf = (run: RunBody) =>
  (run.artifacts as { artifact_type: string; data: Record<string, unknown> }[]).find(
    (a) => a.artifact_type === 'PULL_REQUEST',
  );

interface PullRequestChangeBody {
  type: string;
  data: { run_id: string; artifacts: { artifact_type: string; data: { status?: string } }[] };
  pull_request: { repository: string; url: string; branch: string; status: string; previous_status: string | null };
}

/** The run's `run.pull_request_changed` deliveries `changes` got (repeats of a delivery dropped), the opening first. */
function changesOf(runId: string): PullRequestChangeBody[] {
  return changes
    .unique()
    .map((r) => JSON.parse(r.body) as PullRequestChangeBody)
    .filter((body) => body.data.run_id === runId)
    .sort((a, b) => (a.pull_request.previous_status === null ? -1 : b.pull_request.previous_status === null ? 1 : 0));
}

const signed = (body: string, secret = SECRET) => createHmac('sha256', secret).update(body).digest('hex');

test("Gitea's signed webhook: merging the pull request shows it merged in the run, its events and the clients", async () => {
  const { runId, repository, repositoryUrl, opened, artifactUid, branch } = await runWithPullRequest();
  expect(pullRequestOf(await getRun(ctx, key, runId))).toMatchObject({
    data: { branch, status: 'open', url: opened.url, number: opened.number, artifact_uid: artifactUid },
  });
  await giteaApi(gitea, 'POST', `/repos/${repository.owner}/${repository.name}/hooks`, {
    type: 'gitea',
    active: true,
    events: ['pull_request'],
    config: { url: `${ctx.baseUrl}/api/v1/forge-webhooks/gitea`, content_type: 'json', secret: SECRET },
  });

  await giteaApi(gitea, 'POST', `/repos/${repository.owner}/${repository.name}/pulls/${opened.number}/merge`, {
    Do: 'merge',
  });
  const merged = await waitFor(
    () => getRun(ctx, key, runId),
    (run) => pullRequestOf(run)?.data.status === 'merged',
    'the run to show its pull request merged',
    120_000,
  );
  expect(pullRequestOf(merged)!.data.status_checked_at).toEqual(expect.any(String));

  // The event stream of the (ended) run replays its events, the pull request's among them.
  const stream = await openStream(`${ctx.baseUrl}/api/v1/agent/runs/${runId}/events`, auth(key));
  const event = await stream.waitForEvent((e) => e.event === 'pull_request' && e.data.includes('"merged"'));
  stream.close();
  expect(JSON.parse(event.data)).toMatchObject({
    kind: 'pull_request',
    payload: {
      status: 'merged',
      previous_status: 'open',
      number: opened.number,
      url: opened.url,
      source: 'forge_webhook',
    },
  });

  // The artifact by its uid, the list filter, and the URL lookup (another case of host, a trailing slash).
  const artifact = await ctx.api.get(`/api/v1/agent/artifacts/${artifactUid}`).set(auth(key));
  expect(artifact.body).toMatchObject({
    artifact_type: 'PULL_REQUEST',
    artifact_uid: artifactUid,
    data: { status: 'merged' },
  });
  const byUrl = await ctx.api
    .get('/api/v1/agent/run-by-external-reference')
    .query({ url: `${opened.url.replace('127.0.0.1', '127.0.0.1'.toUpperCase())}/` })
    .set(auth(key));
  expect(byUrl.body).toEqual({ run_id: runId });

  const calls = [
    { call: 'agent.runs.retrieve', args: [runId] },
    { call: 'agent.runs.list', kwargs: { artifact_type: 'PULL_REQUEST' } },
  ];
  for (const client of ['newest', 'oz'] as const) {
    const [read, listed] = await warpClientCalls(ctx.baseUrl, key, calls, client);
    expect(read).toMatchObject({
      ok: { artifacts: [{ artifact_type: 'PULL_REQUEST', data: { branch, url: opened.url } }] },
    });
    expect((listed as { ok: { run_id: string }[] }).ok.map((r) => r.run_id)).toContain(runId);
  }
  const newest = await warpClientCalls(ctx.baseUrl, key, [calls[0]!]);
  expect(newest[0]).toMatchObject({ ok: { artifacts: [{ data: { status: 'merged' } }] } });

  // A subscriber of the service's webhooks sees the pull request in the run at its next state change.
  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'thanks' });
  expect(followup.status).toBe(200);
  await receiver.until(
    (requests) =>
      requests.some((r) => {
        const body = JSON.parse(r.body) as {
          data?: { run_id?: string; artifacts?: { artifact_type: string; data: { status?: string } }[] };
        };
        return (
          body.data?.run_id === runId &&
          (body.data.artifacts ?? []).some((a) => a.artifact_type === 'PULL_REQUEST' && a.data.status === 'merged')
        );
      }),
    "a webhook delivery with the run's merged pull request",
    60_000,
  );

  // The webhook subscribed to run.pull_request_changed: the opening and the merge, each once,
  // with the run as at that change; the one of the default types got no such event.
  await changes.until(
    () => changesOf(runId).some((c) => c.pull_request.status === 'merged'),
    'a run.pull_request_changed delivery of the merge',
    60_000,
  );
  const pullRequest = { repository: repositoryUrl, url: opened.url, branch };
  expect(changesOf(runId).map((c) => [c.type, c.pull_request])).toEqual([
    ['run.pull_request_changed', { ...pullRequest, status: 'open', previous_status: null }],
    ['run.pull_request_changed', { ...pullRequest, status: 'merged', previous_status: 'open' }],
  ]);
  const mergedChange = changesOf(runId)[1]!;
  expect(mergedChange.data.artifacts).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ artifact_type: 'PULL_REQUEST', data: expect.objectContaining({ status: 'merged' }) }),
    ]),
  );
  // Recorded once per change, whatever the forge sent again: the log holds two events, delivered once each.
  const recorded = (await ctx.dataSource.query(
    `SELECT e.pull_request_change->>'status' AS status, count(d.id)::int AS deliveries
       FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id
      WHERE e.run_id = $1 AND e.event_type = 'run.pull_request_changed' GROUP BY e.id ORDER BY e.id`,
    [runId],
  )) as { status: string; deliveries: number }[];
  expect(recorded).toEqual([
    { status: 'open', deliveries: 1 },
    { status: 'merged', deliveries: 1 },
  ]);
  const toDefault = (await ctx.dataSource.query(
    `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE d.webhook_id = $1 AND e.event_type = 'run.pull_request_changed'`,
    [defaultHookId],
  )) as { n: number }[];
  expect(toDefault[0]!.n).toBe(0);
  expect(receiver.requests.filter((r) => r.body.includes('"run.pull_request_changed"'))).toEqual([]);
});

test('a forged signature is 401 and changes nothing; a signed event for a pull request no run delivered is 202', async () => {
  const { runId, repository, opened } = await runWithPullRequest();
  const bodyFor = (number: number) =>
    JSON.stringify({
      action: 'closed',
      number,
      pull_request: { number, state: 'closed', merged: true },
      repository: { html_url: `${gitea.url}/${repository.owner}/${repository.name}` },
    });
  const body = bodyFor(opened.number);
  const send = (signature: string, payload = body) =>
    fetch(`${ctx.baseUrl}/api/v1/forge-webhooks/gitea`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gitea-event': 'pull_request', 'x-gitea-signature': signature },
      body: payload,
    });
  for (const signature of [signed(body, 'not-the-secret-at-all'), '', signed(`${body} `)]) {
    const res = await send(signature);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error_code: string }).error_code).toBe('authentication_required');
  }
  const events = await ctx.dataSource.query(`SELECT 1 FROM run_events WHERE run_id = $1 AND kind = 'pull_request'`, [
    runId,
  ]);
  expect(events).toHaveLength(1); // the opening only
  expect(pullRequestOf(await getRun(ctx, key, runId))!.data.status).toBe('open');

  const unknown = bodyFor(99999);
  const res = await send(signed(unknown), unknown);
  expect(res.status).toBe(202);
  expect(await res.json()).toEqual({ result: 'recorded', matched: 0, changed: 0 });

  const tooLarge = await send(signed('x'), 'x'.repeat(1024 * 1024 + 1));
  expect(tooLarge.status).toBe(413);
});

test('without a webhook, the poll asks Gitea and records the pull request closed', async () => {
  const { runId, repository, opened } = await runWithPullRequest();
  await giteaApi(gitea, 'PATCH', `/repos/${repository.owner}/${repository.name}/pulls/${opened.number}`, {
    state: 'closed',
  });
  const poll = createPullRequestPoll({
    dataSource: ctx.dataSource,
    forges: { [giteaHost]: 'gitea' },
    webhookHosts: [],
    staleSeconds: 0,
    credentialFor: () => gitea.token,
    logger: createLogger('error', 'test'),
  });
  // Hosts with a webhook secret are not polled.
  const skipping = createPullRequestPoll({
    dataSource: ctx.dataSource,
    forges: { [giteaHost]: 'gitea' },
    webhookHosts: [giteaHost],
    staleSeconds: 0,
    credentialFor: () => gitea.token,
    logger: createLogger('error', 'test'),
  });
  await skipping.pollBatch(100);
  expect(pullRequestOf(await getRun(ctx, key, runId))!.data.status).toBe('open');

  await waitFor(
    async () => {
      await poll.pollBatch(100);
      return getRun(ctx, key, runId);
    },
    (run) => pullRequestOf(run)?.data.status === 'closed',
    'the poll to record the pull request closed',
    60_000,
  );
  const [event] = (await ctx.dataSource.query(
    `SELECT payload FROM run_events WHERE run_id = $1 AND kind = 'pull_request' ORDER BY id DESC LIMIT 1`,
    [runId],
  )) as { payload: Record<string, unknown> }[];
  expect(event!.payload).toMatchObject({ status: 'closed', previous_status: 'open', source: 'poll' });
  await changes.until(
    () => changesOf(runId).some((c) => c.pull_request.status === 'closed'),
    'a run.pull_request_changed delivery of the closing the poll found',
    60_000,
  );
  expect(changesOf(runId).map((c) => [c.pull_request.status, c.pull_request.previous_status])).toEqual([
    ['open', null],
    ['closed', 'open'],
  ]);
});

test("a pull request whose team's credential cannot be decrypted is noted and skipped: the poll goes on with the others", async () => {
  const unreadable = await runWithPullRequest();
  const readable = await runWithPullRequest();
  await giteaApi(
    gitea,
    'PATCH',
    `/repos/${readable.repository.owner}/${readable.repository.name}/pulls/${readable.opened.number}`,
    {
      state: 'closed',
    },
  );
  await ctx.dataSource.query(`UPDATE run_pull_requests SET status_checked_at = NULL WHERE run_id = ANY($1)`, [
    [unreadable.runId, readable.runId],
  ]);
  const poll = createPullRequestPoll({
    dataSource: ctx.dataSource,
    forges: { [giteaHost]: 'gitea' },
    webhookHosts: [],
    staleSeconds: 0,
    credentialFor: (pullRequest) => {
      if (pullRequest.runId !== unreadable.runId) return gitea.token;
      throw new SecretDecryptionError('it is encrypted under the key "fp-gone"', 'missing_key');
    },
    logger: createLogger('error', 'test'),
  });
  await waitFor(
    async () => {
      await poll.pollBatch(1000);
      return getRun(ctx, key, readable.runId);
    },
    (run) => pullRequestOf(run)?.data.status === 'closed',
    'the poll to record the readable pull request closed',
    60_000,
  );
  const checked = (await ctx.dataSource.query(`SELECT status_checked_at FROM run_pull_requests WHERE run_id = $1`, [
    unreadable.runId,
  ])) as { status_checked_at: Date | null }[];
  expect(checked[0]!.status_checked_at).not.toBeNull();
  expect(pullRequestOf(await getRun(ctx, key, unreadable.runId))!.data.status).toBe('open');
});
