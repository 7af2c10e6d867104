/**
 * A worker SIGKILLed in the middle of delivering a pull request, against the test run's real
 * Gitea: its push reached the forge, but neither git's answer nor its record of the push did.
 * Another machine takes the run on from its checkpoint, makes the same commit, finds the branch
 * already at it and opens the one pull request. Neither worker's log nor the workflow's history
 * holds the push credential.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SharedGitea } from './stack/on-demand-servers';
import { runWorkflowId } from '../workflows/run-contract';
import { createEnvironment } from './helpers/environments';
import { PUSHES, startForgeProxy, type ForgeProxy } from './helpers/forge-proxy';
import { createRepository, giteaApi, sharedGitea } from './helpers/gitea';
import { pullFiles, pullsOf, teamWithGitCredential } from './helpers/gitea-delivery';
import { createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { killWorker, spawnWorker, waitUntilPolling, within, type WorkerChild } from './helpers/worker-processes';

jest.setTimeout(600_000);

let ctx: TestContext;
let gitea: SharedGitea;
let proxy: ForgeProxy;
const workers: WorkerChild[] = [];

beforeAll(async () => {
  gitea = await sharedGitea();
  proxy = await startForgeProxy(gitea.url);
  ctx = await createTestContext({ worker: false, env: { ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3', ...forgeEnv() } });
});
afterAll(async () => {
  for (const w of workers.splice(0)) await killWorker(w);
  await ctx?.close();
  await proxy?.close();
});

function forgeEnv(): Record<string, string> {
  return { GIT_BASE_URL: `http://${proxy.host}`, GIT_FORGES: `${proxy.host}=gitea` };
}

/** A worker process on a machine of its own (`workspaceDir`), logging everything it logs. */
function worker(workspaceDir: string): WorkerChild {
  const child = spawnWorker(ctx, { workspaceDir, env: { ...forgeEnv(), LOG_LEVEL: 'debug' } });
  workers.push(child);
  return child;
}

/** Every text a history's payloads hold, decoded: what an operator reads in the Temporal UI. */
async function historyText(runId: string): Promise<string> {
  const history = await ctx.client.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
  return JSON.stringify(history, (_key, value: unknown) =>
    value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value,
  );
}

test('a worker killed after its push reached the forge: another machine finishes the delivery with one branch and one pull request, and no log holds the token', async () => {
  const key = await teamWithGitCredential(ctx, gitea, proxy.host);
  const repo = await createRepository(gitea, uniqueName('deliver-death'));
  const envId = await createEnvironment(ctx, key, {
    name: 'worker death',
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const marker = uniqueName('death');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: `echo kept > ${repo.name}/kept.txt` } }] }
      : { text: 'Added kept.txt.' },
  );
  const first = worker(mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-first-')));
  await waitUntilPolling(ctx, first, 'the first worker');
  let release!: () => void;
  const pushHeld = proxy.arm(PUSHES, new Promise<void>((resolve) => (release = resolve)));
  const runId = await createRun(ctx, key, {
    prompt: `Write ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  await within(pushHeld, 240_000, 'the delivery to push', first);
  const branch = `agent-runs/${runId}`;
  const pushed = await branchHead(repo, branch);
  expect(pushed).toMatch(/^[0-9a-f]{40}$/);
  await killWorker(first);
  release();

  const second = worker(mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-second-')));
  await waitUntilPolling(ctx, second, 'the second worker');
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 300_000);

  const pulls = await pullsOf(gitea, repo);
  expect(pulls).toHaveLength(1);
  // The same commit as the one pushed before the kill: the second machine pushed nothing over it.
  expect(pulls[0]!.head).toMatchObject({ ref: branch, sha: pushed });
  const branches = await giteaApi<{ name: string }[]>(gitea, 'GET', `/repos/${repo.owner}/${repo.name}/branches`);
  expect(branches.map((b) => b.name).sort()).toEqual([branch, 'main']);
  expect(await pullFiles(gitea, repo, pulls[0]!)).toEqual(['kept.txt']);
  const rows = (await ctx.dataSource.query(`SELECT head_sha, number, status FROM run_pull_requests WHERE run_id = $1`, [
    runId,
  ])) as { head_sha: string; number: number; status: string }[];
  expect(rows).toEqual([{ head_sha: pushed, number: pulls[0]!.number, status: 'open' }]);

  const basic = Buffer.from(`${gitea.username}:${gitea.token}`).toString('base64');
  const logs = [...first.output, ...second.output].join('');
  // The workers did log (debug): the check below reads something.
  expect(logs.length).toBeGreaterThan(0);
  for (const text of [logs, await historyText(runId)]) {
    expect(text).not.toContain(gitea.token);
    expect(text).not.toContain(basic);
  }
});

async function branchHead(repo: { owner: string; name: string }, branch: string): Promise<string | undefined> {
  const branches = await giteaApi<{ name: string; commit: { id: string } }[]>(
    gitea,
    'GET',
    `/repos/${repo.owner}/${repo.name}/branches`,
  );
  return branches.find((b) => b.name === branch)?.commit.id;
}
