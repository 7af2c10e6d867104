/**
 * Who owns a run's directory on a worker when the workflow gave up its workspace (a blocked
 * call's release) and provisions again before that workspace's removal ran: the new
 * provisioning never keeps the workspace given up, and the late removal then removes nothing.
 * The activities run as a worker runs them, on this context's database, with a sandbox whose
 * only work is the run's directory.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import lockfile from 'proper-lockfile';
import type { ActivityDeps } from '../activities/deps';
import type { Sandbox } from '../activities/sandbox/sandbox';
import { createClaimWorkspace, type ClaimedWorkspace } from '../activities/workspace/claim-workspace';
import { createRemoveWorkspace } from '../activities/workspace/remove-workspace-activity';
import { workspaceContext } from '../activities/workspace/workspace-context';
import {
  provisionedMarker,
  workspaceDir,
  workspaceIdFile,
  workspaceLockFile,
} from '../activities/workspace/workspace-paths';
import { createRun } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ worker: false });
});
afterAll(async () => {
  await ctx?.close();
});

/** Whether the run's workspace lock was held, each time the sandbox made or removed its directory. */
const heldWhenTouched: boolean[] = [];

/** The activities' dependencies on a workspace root of the test's own; the sandbox makes and removes the run's directory. */
function workerDeps(root: string): ActivityDeps {
  const lockHeld = (runId: string) =>
    lockfile.check(workspaceLockFile(root, runId), { realpath: false, stale: 10_000 });
  const sandbox = {
    kind: 'none',
    prepareRun: async (runId: string) => {
      heldWhenTouched.push(await lockHeld(runId));
      mkdirSync(workspaceDir(root, runId), { recursive: true });
    },
    destroyRun: async (runId: string) => {
      heldWhenTouched.push(await lockHeld(runId));
      rmSync(workspaceDir(root, runId), { recursive: true, force: true });
    },
  } as unknown as Sandbox;
  return {
    dataSource: ctx.dataSource,
    config: { ...ctx.config, workspace: { ...ctx.config.workspace, dir: root } },
    workspaceQueue: `${ctx.config.temporal.taskQueue}-claim-test`,
    sandbox,
    mcpSessions: { close: async () => undefined },
  } as unknown as ActivityDeps;
}

/** A workspace as a finished provisioning leaves it: its directory, its id and its marker. */
function provisioned(root: string, runId: string, workspaceId: string): void {
  mkdirSync(workspaceDir(root, runId), { recursive: true });
  writeFileSync(path.join(workspaceDir(root, runId), 'work.txt'), 'the agent’s work');
  for (const file of [workspaceIdFile(root, runId), provisionedMarker(root, runId)]) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, workspaceId);
  }
}

test('a provisioning after the workspace was given up builds afresh, and the removal that comes late removes nothing', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await createRun(ctx, key, { prompt: `Claim ${uniqueName('claim')}` });
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-claim-'));
  const deps = workerDeps(root);
  const ws = workspaceContext(deps);
  const claim = createClaimWorkspace(deps, ws);
  const { removeWorkspace } = createRemoveWorkspace(deps, ws);
  const env = new MockActivityEnvironment();
  provisioned(root, runId, 'given-up');

  // Not given up: the workspace there is kept.
  expect(await env.run(claim, { runId, turn: 1 })).toEqual({ kept: true, workspaceId: 'given-up' });
  // Given up, its removal not yet run: a new workspace owns the directory.
  const fresh = (await env.run(claim, { runId, turn: 2, discarded: 'given-up' })) as ClaimedWorkspace;
  expect(fresh.kept).toBe(false);
  expect(fresh.workspaceId).not.toBe('given-up');
  expect(readFileSync(workspaceIdFile(root, runId), 'utf8')).toBe(fresh.workspaceId);
  expect(existsSync(path.join(workspaceDir(root, runId), 'work.txt'))).toBe(false);
  writeFileSync(path.join(workspaceDir(root, runId), 'restored.txt'), 'restored');

  // The late removal names the workspace given up: the new one stays.
  expect(await env.run(removeWorkspace, { runId, workspaceId: 'given-up' })).toBe(false);
  expect(readFileSync(path.join(workspaceDir(root, runId), 'restored.txt'), 'utf8')).toBe('restored');
  const holder = (await ctx.dataSource.query(`SELECT workspace_id FROM run_workspaces WHERE run_id = $1`, [runId])) as {
    workspace_id: string;
  }[];
  expect(holder).toEqual([{ workspace_id: fresh.workspaceId }]);
  // Removing the current one removes it.
  expect(await env.run(removeWorkspace, { runId, workspaceId: fresh.workspaceId })).toBe(true);
  expect(existsSync(workspaceDir(root, runId))).toBe(false);
  // The claim's and the removals' work on the directory, each under the run's workspace lock.
  expect(heldWhenTouched).toEqual([true, true, true]);
});
