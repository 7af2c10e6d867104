/**
 * Benchmark: what a checkpoint costs per step. A run's workspace of 20,000 files (100 MB) is
 * checkpointed as provisioned, then after each of `steps` steps that change one small file:
 * the time of each checkpoint (walk, store, record), and what the run stores in all against
 * the workspace's size. Needs a private embedded PostgreSQL (started here) and sandbox-init. As
 * root, also with the run's files on a filesystem of their own (AGENT_DISK_LIMITS=enforce), without
 * and with the filesystem's change watcher that lets a checkpoint look at what changed only.
 * Each step lasts `stepMs` before its checkpoint (a step's own work: a model call and a command;
 * `npm run bench:steps` measures 45-70 ms here), so that what a checkpoint leaves to do after it
 * is recorded (the watcher saving its index) happens while the next step works, as in a run.
 * Usage: npm run bench:checkpoints -- [steps=100] [files=20000] [fileKiB=5] [stepMs=50]
 */
import { mkdirSync, mkdtempSync, writeFileSync, appendFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunCheckpoints } from '../activities/checkpoints/run-checkpoints';
import { SpawnServer } from '../activities/sandbox/spawn-server';
import { RunDisks } from '../activities/sandbox/run-disks';
import { locateSandboxInit } from '../activities/sandbox/sandbox-init-binary';
import { runStateDir, workspaceDir } from '../activities/workspace/workspace-paths';
import { newUuidV7 } from '../core/ids';
import { ensureTeam } from '../db/api-keys';
import { recordNewRun } from '../db/run-creation';
import { createObjectStore } from '../infra/object-store/create-object-store';
import { newRun } from '../services/runs/new-run';
import { percentile, startBenchStack, type BenchStack } from './bench-stack';

interface Pass {
  label: string;
  /** The run's files on a filesystem of their own (AGENT_DISK_LIMITS=enforce; needs root). */
  ownFilesystem: boolean;
  /** With the filesystem's change watcher, as a worker runs it (run-disk-watchers.ts). */
  watcher: boolean;
}

const PASSES: Pass[] = [
  {
    label: 'a plain directory (AGENT_DISK_LIMITS=measure): every checkpoint walks',
    ownFilesystem: false,
    watcher: false,
  },
  { label: 'its own filesystem, no watcher: every checkpoint walks', ownFilesystem: true, watcher: false },
  { label: 'its own filesystem with its watcher (fanotify)', ownFilesystem: true, watcher: true },
];

async function main(): Promise<void> {
  const steps = Number(process.argv[2] ?? 100);
  const stepMs = Number(process.argv[5] ?? 50);
  const files = Number(process.argv[3] ?? 20_000);
  const fileBytes = Number(process.argv[4] ?? 5) * 1024;
  const stack = await startBenchStack({ name: 'checkpoints' });
  const initPath = await locateSandboxInit(undefined);
  try {
    const passes = process.getuid?.() === 0 ? PASSES : PASSES.filter((p) => !p.ownFilesystem);
    for (const pass of passes) await benchPass(stack, initPath, pass, { steps, files, fileBytes, stepMs });
  } finally {
    await stack.stop();
  }
}

async function benchPass(
  stack: BenchStack,
  initPath: string,
  pass: Pass,
  { steps, files, fileBytes, stepMs }: { steps: number; files: number; fileBytes: number; stepMs: number },
): Promise<void> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-bench-ws-'));
  const runId = newUuidV7();
  const disks = pass.ownFilesystem
    ? new RunDisks({ root, maxBytes: 1024 ** 3, ...(pass.watcher ? { initPath } : {}) })
    : undefined;
  try {
    const teamId = await ensureTeam(stack.dataSource.manager, 'bench');
    const run = newRun(
      { uid: 'bench', type: 'user', displayName: 'bench', teamId },
      null,
      { prompt: 'bench' },
      { model_id: 'openai/bench', idle_timeout_minutes: 1 },
      { source: 'API' },
      { runId, skill: undefined, conversationId: newUuidV7(), parentRunId: null },
    );
    await recordNewRun(stack.dataSource.manager, run, { mode: 'normal' });
    if (disks && !(await disks.attach(runId))) throw new Error("the run's filesystem did not mount");
    if (pass.watcher && !disks?.watchers?.watching(runId))
      throw new Error(`the watcher did not start: ${disks?.watchers?.lastError}`);
    const workspace = workspaceDir(root, runId);
    mkdirSync(path.join(runStateDir(root, runId), 'home'), { recursive: true });
    const dirs = Math.max(1, Math.floor(files / 100));
    for (let d = 0; d < dirs; d++) mkdirSync(path.join(workspace, `d${d}`), { recursive: true });
    const filler = Buffer.alloc(fileBytes);
    for (let i = 0; i < files; i++) {
      filler.writeUInt32LE(i, 0);
      for (let j = 4; j < fileBytes; j += 997) filler[j] = (i * 31 + j) & 0xff;
      writeFileSync(path.join(workspace, `d${i % dirs}`, `f${i}.txt`), filler);
    }
    const workspaceBytes = files * fileBytes;
    const checkpoints = new RunCheckpoints({
      dataSource: stack.dataSource,
      store: createObjectStore({ kind: 'directory', dir: path.join(root, 'objects') }),
      tools: { launch: SpawnServer.onHost(initPath).launch, initPath },
      workspaceRoot: root,
      // The run has no processes of its own here (a worker reads them from the run's cgroup).
      runPids: async () => [],
    });
    let t0 = performance.now();
    const base = await checkpoints.take(runId, { turn: 1, step: 0 });
    const baseMs = performance.now() - t0;
    let stored = base?.bytesAdded ?? 0;
    const times: number[] = [];
    for (let step = 1; step <= steps; step++) {
      await new Promise((resolve) => setTimeout(resolve, stepMs));
      appendFileSync(path.join(workspace, 'd0', `f${step % files}.txt`), `step ${step}\n`);
      t0 = performance.now();
      const taken = await checkpoints.take(runId, { turn: 1, step });
      times.push(performance.now() - t0);
      if (!taken) throw new Error(`the checkpoint after step ${step} saw no change`);
      stored += taken.bytesAdded;
    }
    const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
    console.log(`== the run's files on ${pass.label}`);
    console.log(`workspace: ${files} files, ${mb(workspaceBytes)}`);
    console.log(`first checkpoint (everything): ${baseMs.toFixed(0)} ms, ${mb(base?.bytesAdded ?? 0)} stored`);
    console.log(
      `a step that changed one file: checkpoint p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms (${steps} steps of ${stepMs} ms each)`,
    );
    console.log(
      `stored in all after ${steps} steps: ${mb(stored)} = ${(stored / workspaceBytes).toFixed(2)}x the workspace`,
    );
  } finally {
    await disks?.detach(runId);
    rmSync(root, { recursive: true, force: true });
  }
}

void main();
