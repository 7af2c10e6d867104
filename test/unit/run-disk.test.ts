import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunDiskLimitError, runDiskQuota, WRITE_BOUND_BYTES_PER_SECOND } from '../../activities/sandbox/run-disk';

const MIB = 1024 * 1024;

/** A sandbox whose runs have no filesystem of their own: their files in `dir`, measured with du. */
const measuredOnly = (dir: string) => ({ runPaths: () => [dir], hostLauncher: undefined });

test('check measures only when the files could have reached the limit since the last measurement', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-disk-'));
  let clock = 1_000_000;
  const quota = runDiskQuota(measuredOnly(dir), 'run', 64 * MIB, { now: () => clock });
  await quota.check();
  // 80 MiB land right after: within the time the bound says that cannot happen, no du is run.
  writeFileSync(path.join(dir, 'big'), Buffer.alloc(80 * MIB, 1));
  clock += 1;
  await expect(quota.check()).resolves.toBeUndefined();
  // Once enough time has passed to write up to the limit at the bound's rate, it measures.
  clock += Math.ceil(((64 * MIB) / WRITE_BOUND_BYTES_PER_SECOND) * 1000);
  await expect(quota.check()).rejects.toBeInstanceOf(RunDiskLimitError);
  // After a measurement over the limit, the next check measures at once.
  await expect(quota.check()).rejects.toThrow('AGENT_WORKSPACE_MAX_BYTES');
});

test('usage always measures, and what it measured is what check starts from', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-disk-'));
  const clock = 5_000_000;
  const quota = runDiskQuota(measuredOnly(dir), 'run', 64 * MIB, { now: () => clock });
  writeFileSync(path.join(dir, 'big'), Buffer.alloc(80 * MIB, 1));
  expect(await quota.usage()).toMatchObject({ bytes: expect.any(Number), reached: true, enforced: false });
  expect((await quota.usage())!.bytes).toBeGreaterThan(64 * MIB);
  await expect(quota.check()).rejects.toBeInstanceOf(RunDiskLimitError);
});
