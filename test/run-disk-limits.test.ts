import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, statSync, statfsSync, writeFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runDiskLayout } from '../activities/sandbox/run-disk-layout';
import { isMountPoint, runDiskPaths, RunDisks } from '../activities/sandbox/run-disks';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * AGENT_DISK_LIMITS=enforce: each run's files on a filesystem of AGENT_WORKSPACE_MAX_BYTES of
 * their own. Attacked with the red team's own command and the other ways to take disk; the host's
 * side is read from the run's image file (the blocks it holds), sampled while the run works.
 */

const MIB = 1024 * 1024;
const LIMIT = 200 * MIB;

let ctx: TestContext;
jest.setTimeout(300_000);

beforeAll(async () => {
  ctx = await createTestContext({ env: { AGENT_WORKSPACE_MAX_BYTES: String(LIMIT) } });
});

afterAll(async () => {
  await ctx?.close();
});

/** The most of the host's disk the run's image held while `until` was pending (bytes allocated). */
async function peakHostBytes(runId: string, until: Promise<unknown>): Promise<number> {
  const image = path.join(ctx.config.workspace.dir, '.disks', `${runId}.ext4`);
  let peak = 0;
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    try {
      peak = Math.max(peak, statSync(image).blocks * 512);
    } catch {
      // Not made yet, or gone.
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return peak;
}

/** Runs the commands as one run_command call each; resolves when the run has ended. */
async function runOf(key: string, commands: string[]) {
  const marker = uniqueName('disk');
  ctx.model.script(marker, (_req, call) =>
    call <= commands.length
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: commands[call - 1]! } }] }
      : { text: 'done' },
  );
  const runId = await createRun(ctx, key, { prompt: `Fill ${marker}`, config: { idle_timeout_minutes: 5 } });
  // Each writes hundreds of MB for real (and its diff and checkpoint read them): minutes on a loaded machine.
  const ended = waitForState(ctx, key, runId, ['FAILED', 'SUCCEEDED', 'ERROR'], undefined, 240_000);
  const peak = await peakHostBytes(runId, ended);
  const outputs = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'tool_call')
    .map((e) => String(e.payload.output));
  return { runId, run: await ended, peak, outputs };
}

/** The run's files are gone from the worker: its image and its workspace. */
async function filesGone(runId: string): Promise<void> {
  const paths = runDiskPaths(ctx.config.workspace.dir, runId);
  const image = path.join(ctx.config.workspace.dir, '.disks', `${runId}.ext4`);
  await waitFor(
    async () => [image, paths.workspace, paths.stateDir].filter((p) => existsSync(p)),
    (left) => left.length === 0,
    "the run's files to be removed",
  );
}

const bound = runDiskLayout(LIMIT).imageBytes;

test('the filesystem of a limit holds the limit, costs the host at most a small slack above it, and almost nothing at start', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-disks-'));
  for (const maxBytes of [24 * MIB, 200 * MIB, 1024 * MIB, 10 * 1024 * MIB]) {
    const disks = new RunDisks({ root, maxBytes });
    const runId = `layout-${maxBytes}`;
    expect(await disks.attach(runId)).toBe(true);
    const { stateDir, workspace } = runDiskPaths(root, runId);
    const fs = statfsSync(stateDir);
    // What an unprivileged writer can fill: at least the limit and its margin.
    const writable = (fs.blocks - fs.bfree + fs.bavail) * fs.bsize;
    expect([maxBytes, writable]).toEqual([maxBytes, expect.any(Number)]);
    expect(writable).toBeGreaterThanOrEqual(maxBytes + MIB);
    // The image can never hold more than its size: the limit, its inode tables (1/32) and 64 MiB.
    const image = statSync(disks.imageFile(runId));
    expect(image.size).toBeLessThanOrEqual(maxBytes * 1.035 + 64 * MIB);
    // A new filesystem takes next to nothing of the host's disk.
    expect(image.blocks * 512).toBeLessThan(2 * MIB);
    expect(await isMountPoint(workspace)).toBe(true);
    await disks.detach(runId);
    expect([await isMountPoint(stateDir), await isMountPoint(workspace), existsSync(disks.imageFile(runId))]).toEqual([
      false,
      false,
      false,
    ]);
  }
});

test("a worker that comes back finds its runs' filesystems: mounted again with their files, orphans removed", async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-disks-'));
  const disks = new RunDisks({ root, maxBytes: 32 * MIB });
  await disks.attach('kept');
  await disks.attach('orphan');
  const kept = runDiskPaths(root, 'kept');
  writeFileSync(path.join(kept.workspace, 'work.txt'), 'hours of edits');
  // A restart of the worker's container: its mounts are gone; an orphan's workspace went too.
  for (const p of [kept.workspace, kept.stateDir, ...Object.values(runDiskPaths(root, 'orphan'))])
    execFileSync('umount', [p]);
  execFileSync('rm', ['-r', runDiskPaths(root, 'orphan').workspace]);
  expect(existsSync(path.join(kept.workspace, 'work.txt'))).toBe(false);
  expect(await new RunDisks({ root, maxBytes: 32 * MIB }).reattach()).toEqual({
    attached: ['kept'],
    removed: ['orphan'],
  });
  expect(readFileSync(path.join(kept.workspace, 'work.txt'), 'utf8')).toBe('hours of edits');
  expect(existsSync(disks.imageFile('orphan'))).toBe(false);
  await disks.detach('kept');
});

test("the red team's fallocate: writes past the limit fail in the run, the host gives it at most the limit and a little, and its files go when it fails", async () => {
  const { key } = await ctx.newTeamKey();
  const { runId, run, peak, outputs } = await runOf(key, [
    'for i in $(seq 1 8); do fallocate -l 1G /tmp/fa$i; done; sleep 10',
  ]);
  expect([run.state, run.status_message]).toEqual([
    'FAILED',
    expect.objectContaining({
      error_code: 'budget_exceeded',
      message: expect.stringContaining('reached its limit of 200.0 MiB (AGENT_WORKSPACE_MAX_BYTES)'),
    }),
  ]);
  // fallocate itself was refused inside the run, and the model was told the limit.
  expect(outputs[0]).toMatch(/fallocate: fallocate failed: No space left on device[\s\S]*AGENT_WORKSPACE_MAX_BYTES/);
  // Space fallocate reserves inside the run's filesystem is not written: the host gave it next to nothing.
  expect(peak).toBeLessThanOrEqual(bound);
  await filesGone(runId);
  await recordReplayFixture(ctx, runId, 'disk-limit-releases-workspace');
});

test('a sparse file takes nothing, a hard link cannot leave the run, and bytes written for real stop at the limit', async () => {
  const { key } = await ctx.newTeamKey();
  const { runId, run, peak, outputs } = await runOf(key, [
    // Larger than the limit, holding nothing: the step's diff and checkpoint still read all of it.
    'truncate -s 256M sparse && stat -c "size %s" sparse && du -k sparse; ln /etc/hostname linked 2>&1; true',
    'head -c 300M /dev/zero > written; ls -s --block-size=M written',
  ]);
  const [sparse, written] = outputs as [string, string];
  expect(sparse).toMatch(/size 268435456\n0\tsparse/);
  expect(sparse).toMatch(/Invalid cross-device link/);
  expect(written).toMatch(/No space left on device[\s\S]*\b(19\d|20\d)M written/);
  expect([run.state, run.status_message]).toEqual([
    'FAILED',
    expect.objectContaining({
      error_code: 'budget_exceeded',
      message: expect.stringContaining('reached its limit of 200.0 MiB (AGENT_WORKSPACE_MAX_BYTES)'),
    }),
  ]);
  // The bytes written took the host's disk, up to the limit and never past the image.
  expect(peak).toBeGreaterThan(LIMIT * 0.95);
  expect(peak).toBeLessThanOrEqual(bound);
  await filesGone(runId);
});

test('many empty files run out of room as bytes would: one inode per 8 KiB of the limit', async () => {
  const { key } = await ctx.newTeamKey();
  const { runId, run, peak, outputs } = await runOf(key, [
    'mkdir -p /tmp/many && for i in $(seq 1 200000); do : > /tmp/many/f$i 2>/dev/null || { echo "stopped at $i"; break; }; done',
  ]);
  const stoppedAt = Number(/stopped at (\d+)/.exec(outputs[0]!)?.[1]);
  expect(stoppedAt).toBeGreaterThan(LIMIT / 8192 / 2);
  expect(stoppedAt).toBeLessThan((LIMIT * 1.1) / 8192);
  expect([run.state, run.status_message]).toEqual([
    'FAILED',
    expect.objectContaining({
      error_code: 'budget_exceeded',
      message: expect.stringContaining('are as many as its limit of 200.0 MiB (AGENT_WORKSPACE_MAX_BYTES) allows'),
    }),
  ]);
  expect(peak).toBeLessThanOrEqual(bound);
  await filesGone(runId);
});
