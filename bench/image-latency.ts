/**
 * Benchmark: what an environment's image costs a run. Against a local registry (Debian's
 * docker-registry on loopback), with skopeo and umoci as workers use them:
 * - cold: resolve, pull and unpack into an empty cache (a small busybox image and a larger one
 *   carrying a ~100 MB binary), and the disk each takes unpacked;
 * - warm start: what a run whose image is cached pays at provisioning (the registry is asked
 *   for the digest, the image is leased and recorded for the run's sandbox);
 * - per command: `true` through run_command's path on the host's root and on the image;
 * - setup snapshots: keeping a workspace like a JavaScript project's after `npm ci` (many small
 *   files) as a layer, and restoring it into a fresh run, against a `cp -a` of the same tree.
 * Usage: npm run bench:images -- [rounds=50]
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ImageStore, type ImageUse } from '../activities/images/image-store';
import { createSandbox, createToolSandbox } from '../activities/sandbox/create-sandbox';
import type { RunImageRoot, Sandbox } from '../activities/sandbox/sandbox';
import { runProcesses } from '../activities/sandbox/sandboxed-process';
import { tarCreate, tarExtract } from '../activities/workspace/environment-snapshot';
import { loadConfig } from '../core/config';
import { parseImageReference } from '../core/image-reference';
import { createLogger } from '../core/logger';
import { OutboundAddressRules } from '../core/outbound-addresses';
import { busyboxFiles, pushImage, startRegistry } from '../test/helpers/image-registry';

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const median = (values: number[]) => sorted(values)[Math.floor(values.length / 2)] ?? NaN;
const p95 = (values: number[]) => sorted(values)[Math.floor(values.length * 0.95)] ?? NaN;
const ms = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e6;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

function rootOf(use: ImageUse): RunImageRoot {
  return { digest: use.image.digest, rootfs: use.image.rootfs, env: {} };
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 50);
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-bench-images-'));
  // The sandbox uid reaches workspaces and images by name.
  chmodSync(scratch, 0o711);
  const registry = await startRegistry();
  try {
    const images = {
      busybox: `${registry.host}/bench/busybox:v1`,
      large: `${registry.host}/bench/large:v1`,
    };
    await pushImage(images.busybox, busyboxFiles('bench'));
    await pushImage(images.large, { ...busyboxFiles('bench-large'), 'opt/node/bin/node': { copy: process.execPath } });
    const config = loadConfig({
      AGENT_RUNS_WORKSPACE_DIR: path.join(scratch, 'workspaces'),
      IMAGE_CACHE_DIR: path.join(scratch, 'images'),
      IMAGE_INSECURE_REGISTRIES: registry.host,
      LOG_LEVEL: 'error',
    });
    const store = new ImageStore(config.images, [], new OutboundAddressRules([]), await createToolSandbox(config));
    const sandbox: Sandbox = await createSandbox(
      config,
      new OutboundAddressRules([]),
      createLogger('error', 'bench'),
      undefined,
      store,
    );
    const use = (text: string, runId: string) => {
      const parsed = parseImageReference(text);
      if (!parsed.ok) throw new Error(parsed.problem);
      return store.use({ runId, text, image: parsed.image, onProgress: () => undefined });
    };

    process.stdout.write('cold pull + unpack (empty cache)\n');
    const pulled: Record<string, ImageUse> = {};
    for (const [name, text] of Object.entries(images)) {
      const started = process.hrtime.bigint();
      pulled[name] = await use(text, `cold-${name}`);
      const total = ms(started);
      const u = pulled[name];
      process.stdout.write(
        `  ${name.padEnd(8)} ${mib(u.image.downloadBytes).padStart(10)} download   total ${total.toFixed(0).padStart(5)} ms (pull ${u.pullMs} ms, unpack ${u.unpackMs} ms)   on disk ${mib(u.image.diskBytes)}\n`,
      );
    }

    const warm: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const runId = `warm-${i}`;
      await sandbox.prepareRun(runId);
      const started = process.hrtime.bigint();
      const u = await use(images.busybox, runId);
      await sandbox.useImage!(runId, rootOf(u));
      warm.push(ms(started));
      if (!u.cached) throw new Error('expected a cache hit');
      await sandbox.destroyRun(runId);
    }
    process.stdout.write(
      `warm start (cached image: resolve, lease, record)   median ${median(warm).toFixed(1)} ms   p95 ${p95(warm).toFixed(1)} ms\n`,
    );

    await sandbox.prepareRun('host');
    await sandbox.prepareRun('image');
    await sandbox.useImage!('image', rootOf(pulled.busybox!));
    const times: Record<string, number[]> = { host: [], image: [] };
    for (let i = 0; i < rounds; i++) {
      for (const runId of ['host', 'image']) {
        const started = process.hrtime.bigint();
        const result = await runProcesses(sandbox, runId).runCommand({
          command: 'true',
          policy: 'open',
          timeoutMs: 30_000,
          keepBytes: 1024,
        });
        if (result.exitCode !== 0) throw new Error(`${runId}: exit ${result.exitCode}: ${result.output}`);
        times[runId]!.push(ms(started));
      }
    }
    process.stdout.write(`run_command \`true\` (proxy open), ${rounds} rounds each, alternating\n`);
    for (const [name, t] of Object.entries(times)) {
      process.stdout.write(
        `  ${`${name} root`.padEnd(12)} median ${median(t).toFixed(1).padStart(6)} ms   p95 ${p95(t).toFixed(1).padStart(6)} ms\n`,
      );
    }
    await sandbox.destroyRun('host');
    await sandbox.destroyRun('image');
    await benchSnapshots(sandbox, store, Math.max(3, Math.ceil(rounds / 10)));
  } finally {
    await registry.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** What a setup snapshot costs to keep and to restore, for a workspace of many small files. */
async function benchSnapshots(sandbox: Sandbox, store: ImageStore, rounds: number): Promise<void> {
  const source = 'snapshot-source';
  await sandbox.prepareRun(source);
  const processes = runProcesses(sandbox, source);
  // 20,000 files in 400 directories, 1-8 KiB each (about 90 MiB), plus a git repository.
  const made = await processes.runCommand({
    command: `git init -q repo && python3 -c "
import os, random
random.seed(1)
for d in range(400):
    p = f'repo/node_modules/pkg{d}/lib'
    os.makedirs(p)
    for f in range(50):
        with open(f'{p}/f{f}.js', 'wb') as out: out.write(os.urandom(random.randint(1024, 8192)))
" && du -sb . | cut -f1 && find . -type f | wc -l`,
    policy: 'none',
    timeoutMs: 300_000,
    keepBytes: 4096,
  });
  if (made.exitCode !== 0) throw new Error(`making the workspace: ${made.output}`);
  const [bytes, files] = made.output.trim().split('\n').map(Number);
  const inside = [sandbox.workspacePath(source), sandbox.homePath(source)].map((p) => p.slice(1));
  const save: number[] = [];
  const restore: number[] = [];
  const copy: number[] = [];
  let layerBytes = 0;
  for (let i = 0; i < rounds; i++) {
    const key = createHash('sha256').update(`bench-${i}`).digest('hex');
    let started = process.hrtime.bigint();
    const saved = await store.snapshots.save(
      key,
      `bench-env-${i}`,
      async (layer) => {
        await processes.exec(tarCreate(inside), { output: layer, timeoutMs: 300_000 });
      },
      async () => true,
    );
    save.push(ms(started));
    if (!saved.saved) throw new Error(`not kept: ${saved.why}`);
    layerBytes = saved.snapshot.diskBytes;
    const target = `snapshot-target-${i}`;
    await sandbox.prepareRun(target);
    started = process.hrtime.bigint();
    const restored = await store.snapshots.restore(key, target, async (layer) => {
      await runProcesses(sandbox, target).exec(tarExtract(inside), { input: layer, timeoutMs: 300_000 });
    });
    restore.push(ms(started));
    if (!restored.restored) throw new Error(`not restored: ${restored.why}`);
    await sandbox.destroyRun(target);
    // The floor: copying the same tree on the host, as root, with no sandbox and no layer.
    const into = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-bench-copy-'));
    started = process.hrtime.bigint();
    execFileSync('cp', ['-a', sandbox.runPaths(source)[0]!, into]);
    copy.push(ms(started));
    rmSync(into, { recursive: true, force: true });
  }
  await sandbox.destroyRun(source);
  process.stdout.write(
    `setup snapshot of ${files} files, ${mib(bytes ?? 0)} (layer ${mib(layerBytes)}), ${rounds} rounds\n` +
      `  keep      median ${median(save).toFixed(0).padStart(6)} ms\n` +
      `  restore   median ${median(restore).toFixed(0).padStart(6)} ms   (digest checked, then extracted in the run's sandbox)\n` +
      `  cp -a     median ${median(copy).toFixed(0).padStart(6)} ms   (the same tree, host to host: the floor)\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
