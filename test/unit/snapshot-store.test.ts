import { appendFileSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ImageCache, SNAPSHOT_LAYER } from '../../activities/images/image-cache';
import { SnapshotStore } from '../../activities/images/snapshot-store';

const HOUR = 3_600_000;
const KEY_A = 'a'.repeat(64);
const KEY_B = 'b'.repeat(64);
const current = () => Promise.resolve(true);

async function storeIn(options: { cacheMaxBytes?: number; snapshotMaxAgeMs?: number } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-snapshots-'));
  const cache = new ImageCache(dir, 5);
  await cache.open();
  const store = new SnapshotStore(cache, () => Promise.resolve(), {
    cacheMaxBytes: options.cacheMaxBytes ?? 1024 ** 3,
    snapshotMaxAgeMs: options.snapshotMaxAgeMs ?? HOUR,
  });
  const entry = (key: string) => path.join(dir, 'entries', key);
  return { dir, cache, store, entry };
}

function writes(bytes: Buffer) {
  return async (layer: Writable) => {
    layer.end(bytes);
  };
}

async function readAll(layer: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of layer) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const notCalled = () => Promise.reject(new Error('not called'));

test('a kept snapshot is restored byte for byte, content-addressed, and a second keeper of the same key keeps nothing', async () => {
  const { dir, store } = await storeIn();
  const layer = Buffer.from('workspace bytes '.repeat(1000));
  const saved = await store.save(KEY_A, 'env-1', writes(layer), current);
  expect(saved).toMatchObject({ saved: true, snapshot: { key: KEY_A, environment: 'env-1', diskBytes: layer.length } });
  if (!saved.saved) throw new Error('not saved');
  expect(saved.snapshot.layerDigest).toMatch(/^sha256:[0-9a-f]{64}$/);

  let restored: Buffer = Buffer.alloc(0);
  const outcome = await store.restore(KEY_A, 'run-1', async (l) => {
    restored = await readAll(l);
  });
  expect(outcome).toMatchObject({ restored: true, snapshot: { layerDigest: saved.snapshot.layerDigest } });
  expect(restored.equals(layer)).toBe(true);
  // The restore's lease is gone once it is done, its directory too.
  expect(readdirSync(path.join(dir, 'leases'))).toEqual([]);

  expect(await store.save(KEY_A, 'env-1', writes(Buffer.from('other')), current)).toEqual({
    saved: false,
    why: 'another run of this environment kept one meanwhile',
  });
  expect(await store.restore(KEY_B, 'run-1', notCalled)).toEqual({ restored: false, why: 'none' });
  // Nothing half-made is left in staging.
  expect(readdirSync(path.join(dir, 'staging'))).toEqual([]);
});

test('a damaged layer is found before anything is extracted and removed; an extraction that fails keeps a good one', async () => {
  const { store, entry } = await storeIn();
  await store.save(KEY_A, 'env-1', writes(Buffer.from('good bytes')), current);
  appendFileSync(path.join(entry(KEY_A), SNAPSHOT_LAYER), 'tampered');
  expect(await store.restore(KEY_A, 'run-1', notCalled)).toEqual({
    restored: false,
    why: 'damaged',
    detail: expect.stringMatching(/^its layer is sha256:[0-9a-f]{64}, not sha256:[0-9a-f]{64}$/),
    removed: true,
  });
  expect(existsSync(entry(KEY_A))).toBe(false);

  await store.save(KEY_B, 'env-2', writes(Buffer.from('fine bytes')), current);
  await expect(store.restore(KEY_B, 'run-1', () => Promise.reject(new Error('tar: disk full')))).rejects.toThrow(
    'tar: disk full',
  );
  expect(existsSync(entry(KEY_B))).toBe(true);
});

test('a snapshot older than the maximum age is not restored and is replaced by the next one kept', async () => {
  const { store, entry } = await storeIn({ snapshotMaxAgeMs: 1 });
  await store.save(KEY_A, 'env-1', writes(Buffer.from('old')), current);
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(await store.restore(KEY_A, 'run-1', notCalled)).toEqual({ restored: false, why: 'expired' });
  expect(existsSync(entry(KEY_A))).toBe(false);
  expect(await store.save(KEY_A, 'env-1', writes(Buffer.from('new')), current)).toMatchObject({ saved: true });
});

test('an environment keeps its newest snapshot only; expired ones and those of deleted environments are swept', async () => {
  const { store, entry } = await storeIn();
  await store.save(KEY_A, 'env-1', writes(Buffer.from('first commit')), current);
  expect(await store.save(KEY_B, 'env-1', writes(Buffer.from('second commit')), current)).toMatchObject({
    saved: true,
    replaced: 1,
  });
  expect(existsSync(entry(KEY_A))).toBe(false);
  expect(existsSync(entry(KEY_B))).toBe(true);

  await store.save(KEY_A, 'env-2', writes(Buffer.from('other environment')), current);
  expect(await store.removeUnneeded(async () => new Set(['env-1', 'env-2']))).toEqual([]);
  expect(await store.removeUnneeded(async () => new Set(['env-1']))).toEqual([KEY_A]);
  expect(existsSync(entry(KEY_B))).toBe(true);

  const aged = await storeIn({ snapshotMaxAgeMs: 1 });
  await aged.store.save(KEY_A, 'env-1', writes(Buffer.from('old')), current);
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(await aged.store.removeUnneeded(async () => new Set(['env-1']))).toEqual([KEY_A]);
});

test('a workspace that changed hands while it was tarred is not kept', async () => {
  const { store, entry } = await storeIn();
  expect(await store.save(KEY_A, 'env-1', writes(Buffer.from('half a clone')), () => Promise.resolve(false))).toEqual({
    saved: false,
    why: 'the workspace was provisioned again while it was being kept',
  });
  expect(existsSync(entry(KEY_A))).toBe(false);
});

test('snapshots share the cache cap: one that does not fit beside what live runs hold is stopped and not kept; otherwise the least recently used goes', async () => {
  const { cache, store, entry } = await storeIn({ cacheMaxBytes: 1500 });
  await store.save(KEY_A, 'env-1', writes(Buffer.alloc(1000, 1)), current);
  await cache.lease(KEY_A, 'run-live');
  // B would take the cache past its cap, and A is held by a live run: B is refused, nothing evicted.
  const b = await store.save(KEY_B, 'env-2', writes(Buffer.alloc(1000, 2)), current);
  expect(b).toMatchObject({ saved: false, why: expect.stringContaining('has room for beside what live runs use') });
  expect(existsSync(entry(KEY_B))).toBe(false);
  expect(existsSync(entry(KEY_A))).toBe(true);

  await cache.releaseLease(KEY_A, 'run-live');
  expect(await store.save(KEY_B, 'env-2', writes(Buffer.alloc(1000, 2)), current)).toMatchObject({
    saved: true,
    evicted: [`snapshot ${KEY_A.slice(0, 12)}`],
  });
  expect(existsSync(entry(KEY_A))).toBe(false);

  const tooBig = await store.save(KEY_A, 'env-1', writes(Buffer.alloc(2000, 3)), current);
  expect(tooBig).toMatchObject({ saved: false, why: expect.stringContaining('IMAGE_CACHE_MAX_BYTES') });
  expect(existsSync(entry(KEY_A))).toBe(false);
  expect(existsSync(entry(KEY_B))).toBe(true);
});
