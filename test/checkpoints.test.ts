import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunCheckpoints } from '../activities/checkpoints/run-checkpoints';
import { forkLauncher } from '../activities/sandbox/launched-process';
import { locateSandboxInit } from '../activities/sandbox/sandbox-init-binary';
import { runStateDir } from '../activities/workspace/workspace-paths';
import { latestCheckpoint, type CheckpointRow } from '../db/checkpoint-reads';
import { killWorker, spawnWorker, waitUntilPolling, type WorkerChild } from './helpers/worker-processes';
import { createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * Checkpoints of a run's files: after each step that changed them, only what changed is stored;
 * a run whose worker dies goes on elsewhere with every completed step's files.
 */

let ctx: TestContext;
const workers: WorkerChild[] = [];

beforeAll(async () => {
  ctx = await createTestContext({ worker: false, env: { ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3' } });
});

afterEach(async () => {
  for (const w of workers.splice(0)) await killWorker(w);
});

afterAll(async () => {
  await ctx?.close();
});

jest.setTimeout(180_000);

function worker(workspaceDir = ctx.config.workspace.dir): WorkerChild {
  const child = spawnWorker(ctx, { workspaceDir });
  workers.push(child);
  return child;
}

/** One run_command per step, then a final answer. */
function scriptCommands(marker: string, commands: string[]) {
  ctx.model.script(marker, (_req, call) =>
    call <= commands.length
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: commands[call - 1]! } }] }
      : { text: `done ${marker}` },
  );
}

async function checkpointsOf(runId: string): Promise<CheckpointRow[]> {
  const rows = (await ctx.dataSource.query(
    `SELECT checkpoint_id, turn, step, files, bytes, bytes_added, full_manifest FROM checkpoints WHERE run_id = $1 ORDER BY created_at, checkpoint_id`,
    [runId],
  )) as { checkpoint_id: string; turn: number; step: number; files: number; bytes: string; bytes_added: string }[];
  return rows.map((r) => ({
    turn: r.turn,
    step: r.step,
    files: r.files,
    bytes: Number(r.bytes),
    bytesAdded: Number(r.bytes_added),
  })) as unknown as CheckpointRow[];
}

/** Every entry under `dir`: type, mode, and a symlink's target or a file's bytes. */
function tree(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    const rel = `${prefix}${name}`;
    const st = lstatSync(full);
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) out[rel] = `link ${readlinkSync(full)}`;
    else if (st.isDirectory()) Object.assign(out, { [rel]: `dir ${mode}` }, tree(full, `${rel}/`));
    else out[rel] = `file ${mode} ${readFileSync(full).toString('base64')}`;
  }
  return out;
}

test("each step that changes the run's files leaves a checkpoint storing only what changed, and a checkpoint makes the files again exactly", async () => {
  await waitUntilPolling(ctx, worker(), 'the worker');
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('steps');
  scriptCommands(marker, [
    'head -c 3000000 /dev/urandom > big.bin; mkdir -p src && echo one > src/a.txt && ln -s src/a.txt link && chmod 750 src && truncate -s 16M holes.bin && printf y >> holes.bin && echo ok',
    'cat src/a.txt',
    'echo two >> src/a.txt; rm big.bin; printf "x" > "name with spaces"',
  ]);
  const runId = await createRun(ctx, key, { prompt: `Work ${marker}`, config: { idle_timeout_minutes: 5 } });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  const checkpoints = await checkpointsOf(runId);
  // The workspace as provisioned, then after steps 1 and 3; the read-only step 2 changed nothing.
  expect(checkpoints.map((c) => [c.turn, c.step])).toEqual([
    [1, 0],
    [1, 1],
    [1, 3],
  ]);
  const [, afterFirst, afterThird] = checkpoints as [CheckpointRow, CheckpointRow, CheckpointRow];
  expect(afterFirst.bytesAdded).toBeGreaterThan(3_000_000);
  // Step 3 changed a line and added a byte: a pack of two small files and a small manifest.
  expect(afterThird.bytesAdded).toBeLessThan(16 * 1024);
  // big.bin is gone from the workspace (its blob stays in .git, where the step's diff put it).
  expect(afterThird.bytes).toBeLessThan(afterFirst.bytes - 2_000_000);

  // Made again elsewhere from the latest checkpoint: the same tree, byte for byte, modes and links too.
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-restore-'));
  const target = 'restored-run';
  mkdirSync(path.join(root, target));
  mkdirSync(path.join(runStateDir(root, target), 'home'), { recursive: true });
  const checkpoints2 = new RunCheckpoints({
    dataSource: ctx.dataSource,
    store: ctx.objectStore,
    tools: { launch: forkLauncher, initPath: await locateSandboxInit(undefined) },
    workspaceRoot: root,
  });
  await checkpoints2.restore(target, (await latestCheckpoint(ctx.dataSource.manager, runId))!);
  const live = tree(path.join(ctx.config.workspace.dir, runId));
  // All but the diff step's own index, a cache left out by design.
  delete live['.git/agent-runs-snapshot.index'];
  expect(tree(path.join(root, target))).toEqual(live);
  expect(live['src/a.txt']).toBe(`file 644 ${Buffer.from('one\ntwo\n').toString('base64')}`);
  expect(live.link).toBe('link src/a.txt');
  expect(live.src).toBe('dir 750');
  // A sparse file comes back sparse: its size, not its bytes, on the new disk.
  const holes = lstatSync(path.join(root, target, 'holes.bin'));
  expect(holes.size).toBe(16 * 1024 * 1024 + 1);
  expect(holes.blocks * 512).toBeLessThan(1024 * 1024);
});

test("a worker killed mid-run: the run goes on on another machine with every completed step's files, and says from which checkpoint", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('resume');
  scriptCommands(marker, [
    `echo "first step ${marker}" > first.txt && echo wrote`,
    'touch started; while [ ! -e go ]; do sleep 0.1; done',
    'cat first.txt; ls',
  ]);
  const first = worker();
  await waitUntilPolling(ctx, first, 'the first worker');
  const runId = await createRun(ctx, key, { prompt: `Resume ${marker}` });
  const oldWorkspace = path.join(ctx.config.workspace.dir, runId);
  await waitFor(
    async () => lstatSync(path.join(oldWorkspace, 'started'), { throwIfNoEntry: false }),
    Boolean,
    'step 2 to run',
    60_000,
  );
  await killWorker(first);

  // Another machine: its own workspace directory; the object store is shared.
  const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-elsewhere-'));
  worker(elsewhere);
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  const events = await transcript(ctx, runId);
  const results = events.filter((e) => e.kind === 'tool_call').map((e) => String(e.payload.output));
  // Step 1's file is there on the new machine; step 2 (interrupted) did not run again.
  expect(results[results.length - 1]).toContain(`first step ${marker}`);
  expect(results[results.length - 1]).not.toContain('started');
  const notices = events.filter((e) => e.kind === 'notice').map((e) => String(e.payload.message));
  expect(notices.join('\n')).toContain("the run's files as its checkpoint after step 1 of turn 1 left them");
  expect(readFileSync(path.join(elsewhere, runId, 'first.txt'), 'utf8')).toBe(`first step ${marker}\n`);
});
