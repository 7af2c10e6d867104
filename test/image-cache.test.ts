import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { hexOf } from '../activities/images/image-cache';
import { ImageStore } from '../activities/images/image-store';
import type { ToolSandbox } from '../activities/sandbox/tool-sandbox';
import { releaseLeasesNothingUses } from '../activities/images/lease-sweep';
import { parseImageReference } from '../core/image-reference';
import { OutboundAddressRules } from '../core/outbound-addresses';
import {
  busyboxFiles,
  missingImageTools,
  pushImage,
  startRegistry,
  type LocalRegistry,
} from './helpers/image-registry';
import { createRun } from './helpers/runs';
import { createTestContext } from './helpers/test-context';
import { toolSandboxForTests } from './helpers/tool-sandbox';

/** The image cache on its own, against a real registry: eviction under a tiny cap, leases, a crashed pull's leftovers. */
const TOOLS_UID = 200_001;
let tools: ToolSandbox;
let registry: LocalRegistry;
const digests: Record<string, string> = {};

beforeAll(async () => {
  expect(missingImageTools()).toEqual([]);
  tools = await toolSandboxForTests(TOOLS_UID);
  registry = await startRegistry();
  for (const name of ['a', 'b', 'c']) {
    digests[name] = await pushImage(`${registry.host}/cache/${name}:v1`, busyboxFiles(`marker-${name}`));
  }
});
afterAll(async () => {
  await registry?.stop();
});

/** A store over `dir` (a new cache when not given) with a cap of `maxBytes`. */
async function storeWithCap(maxBytes: number, given?: string): Promise<{ store: ImageStore; dir: string }> {
  const dir = given ?? (await mkdtemp(path.join(os.tmpdir(), 'agent-runs-images-')));
  const store = new ImageStore(
    {
      cacheDir: dir,
      cacheMaxBytes: maxBytes,
      insecureRegistries: [registry.host],
      pullTimeoutSeconds: 60,
      snapshotMaxAgeMs: 3_600_000,
      toolsUid: TOOLS_UID,
    },
    [registry.host],
    new OutboundAddressRules([]),
    tools,
  );
  return { store, dir };
}

function use(store: ImageStore, name: string, runId: string) {
  const text = `${registry.host}/cache/${name}:v1`;
  const parsed = parseImageReference(text);
  if (!parsed.ok) throw new Error(parsed.problem);
  return store.use({ runId, text, image: parsed.image, onProgress: () => undefined });
}

test('past the cap, least recently used images go, but never one a live run holds', async () => {
  // Each busybox image takes about 2.2 MB unpacked: the cap holds one.
  const { store } = await storeWithCap(3 * 1024 * 1024);
  const a = await use(store, 'a', 'run-1');
  expect(a.cached).toBe(false);
  const b = await use(store, 'b', 'run-2');
  // Over the cap, but both are in use: nothing goes.
  expect(b.evicted).toEqual([]);
  expect(existsSync(a.image.rootfs)).toBe(true);

  await store.release('run-1');
  const c = await use(store, 'c', 'run-3');
  expect(c.evicted).toEqual([digests.a]);
  expect(existsSync(a.image.rootfs)).toBe(false);
  expect(existsSync(path.join(b.image.rootfs, 'marker'))).toBe(true);
  expect(existsSync(path.join(c.image.rootfs, 'marker'))).toBe(true);

  // Gone means pulled again, not half there.
  const again = await use(store, 'a', 'run-4');
  expect(again.cached).toBe(false);
  expect(existsSync(path.join(again.image.rootfs, 'bin/busybox'))).toBe(true);
});

test("a crashed pull's leftovers (staging, a stale lock, an entry with no record) are never trusted and do not block the next pull", async () => {
  const { store, dir } = await storeWithCap(1024 * 1024 * 1024);
  await use(store, 'b', 'warm-up');
  const hex = hexOf(digests.a!);
  const staged = path.join(dir, 'staging', `${hex}.crashed`);
  await mkdir(path.join(staged, 'bundle', 'rootfs'), { recursive: true });
  await writeFile(path.join(staged, 'bundle', 'rootfs', 'marker'), 'half-written\n');
  // A half entry at the final path: what a rename would never leave, but a disk restore might.
  await mkdir(path.join(dir, 'entries', hex, 'rootfs'), { recursive: true });
  await writeFile(path.join(dir, 'entries', hex, 'rootfs', 'marker'), 'half-written\n');
  const lock = path.join(dir, 'locks', `${hex}.lock`);
  await mkdir(lock);
  const old = new Date(Date.now() - 60_000);
  await utimes(lock, old, old);

  const pulled = await use(store, 'a', 'after-crash');
  expect(pulled.cached).toBe(false);
  expect(pulled.image.digest).toBe(digests.a);
  expect(await readdir(path.join(dir, 'staging'))).toEqual([]);
  expect(await readFile(path.join(pulled.image.rootfs, 'marker'), 'utf8')).toBe('marker-a\n');
});

test("leases of runs that no longer exist are released by the sweep (a dead worker's), those of live runs stay", async () => {
  const ctx = await createTestContext({ worker: false });
  try {
    const { store, dir } = await storeWithCap(1024 * 1024 * 1024);
    const gone = randomUUID();
    await use(store, 'b', gone);
    const { key } = await ctx.newTeamKey();
    const live = await createRun(ctx, key, { prompt: 'Queued, never run: no worker here' });
    await use(store, 'c', live);
    expect((await store.leaseHolders()).sort()).toEqual([gone, live].sort());

    expect(await releaseLeasesNothingUses(store, ctx.dataSource.manager, 600)).toEqual([gone]);
    expect(await store.leaseHolders()).toEqual([live]);
    // Nothing holds b now: past a cap of one image it goes, while c, leased, stays.
    const { store: tiny } = await storeWithCap(3 * 1024 * 1024, dir);
    const evictedOnPull = await use(tiny, 'a', randomUUID());
    expect(evictedOnPull.evicted).toContain(digests.b);
    expect(evictedOnPull.evicted).not.toContain(digests.c);
  } finally {
    await ctx.close();
  }
});
