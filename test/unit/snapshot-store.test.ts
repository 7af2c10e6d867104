import { appendFileSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ImageCache, SNAPSHOT_LAYER } from '../../activities/images/image-cache';
import { SnapshotStore } from '../../activities/images/snapshot-store';

const HOUR = 3_600_000;
const KEY_A = 'a'.repeat(64);
const KEY_B = 'b'.repeat(64);

async function storeIn(dir: string, options: { cacheMaxBytes?: number; snapshotMaxAgeMs?: number } = {}) {
  const cache = new ImageCache(dir, 5);
  await cache.open();
  const store = new SnapshotStore(cache, () => Promise.resolve(), {
    cacheMaxBytes: options.cacheMaxBytes ?? 1024 ** 3,
    snapshotMaxAgeMs: options.snapshotMaxAgeMs ?? HOUR,
  });
  return { cache, store };
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

test('a kept snapshot is restored byte for byte, content-addressed, and a second keeper of the same key keeps nothing', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-snapshots-'));
  const { store } = await storeIn(dir);
  const layer = Buffer.from('workspace bytes '.repeat(1000));
  const saved = await store.save(KEY_A, 'env-1', writes(layer));
  expect(saved).toMatchObject({ saved: true, snapshot: { key: KEY_A, environment: 'env-1', diskBytes: layer.length } });
  if (!saved.saved) throw new Error('not saved');
  expect(saved.snapshot.layerDigest).toMatch(/^sha256:[0-9a-f]{64}$/);

  let restored: Buffer = Buffer.alloc(0);
  const outcome = await store.restore(KEY_A, 'run-1', async (l) => {
    restored = await readAll(l);
  });
  expect(outcome).toMatchObject({ restored: true, snapshot: { layerDigest: saved.snapshot.layerDigest } });
  expect(restored.equals(layer)).toBe(true);
  // The restore's lease is gone once it is done.
  expect(readdirSync(path.join(dir, 'leases', KEY_A))).toEqual([]);

  expect(await store.save(KEY_A, 'env-1', writes(Buffer.from('other')))).toEqual({
    saved: false,
    why: 'another run of this environment kept one meanwhile',
  });
  expect(await store.restore(KEY_B, 'run-1', () => Promise.reject(new Error('not called')))).toEqual({
    restored: false,
    why: 'none',
  });
  // Nothing half-made is left in staging.
  expect(readdirSync(path.join(dir, 'staging'))).toEqual([]);
});

test('a damaged layer, or one that fails to unpack, is removed and the restore says why', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-snapshots-'));
  const { store } = await storeIn(dir);
  await store.save(KEY_A, 'env-1', writes(Buffer.from('good bytes')));
  appendFileSync(path.join(dir, 'entries', KEY_A, SNAPSHOT_LAYER), 'tampered');
  await expect(store.restore(KEY_A, 'run-1', (l) => readAll(l).then(() => undefined))).rejects.toThrow(
    /could not restore the setup snapshot aaaaaaaaaaaa \(its layer is sha256:[0-9a-f]{64}, not sha256:/,
  );
  expect(existsSync(path.join(dir, 'entries', KEY_A))).toBe(false);

  await store.save(KEY_B, 'env-1', writes(Buffer.from('fine bytes')));
  await expect(store.restore(KEY_B, 'run-1', () => Promise.reject(new Error('tar: disk full')))).rejects.toThrow(
    'tar: disk full',
  );
  expect(existsSync(path.join(dir, 'entries', KEY_B))).toBe(false);

  // A cancelled restore leaves a good snapshot in place.
  await store.save(KEY_B, 'env-1', writes(Buffer.from('fine bytes')));
  const cancelled = new AbortController();
  cancelled.abort();
  await expect(
    store.restore(KEY_B, 'run-1', () => Promise.reject(new Error('aborted')), cancelled.signal),
  ).rejects.toThrow('aborted');
  expect(existsSync(path.join(dir, 'entries', KEY_B))).toBe(true);
});

test('a snapshot older than the maximum age is not restored and is replaced by the next one kept', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-snapshots-'));
  const { store } = await storeIn(dir, { snapshotMaxAgeMs: 1 });
  await store.save(KEY_A, 'env-1', writes(Buffer.from('old')));
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(await store.restore(KEY_A, 'run-1', () => Promise.reject(new Error('not called')))).toEqual({
    restored: false,
    why: 'expired',
  });
  expect(existsSync(path.join(dir, 'entries', KEY_A))).toBe(false);
  expect(await store.save(KEY_A, 'env-1', writes(Buffer.from('new')))).toMatchObject({ saved: true });
});

test('snapshots share the cache cap: the least recently used goes, a leased one stays, one over the cap is not kept', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-snapshots-'));
  const { cache, store } = await storeIn(dir, { cacheMaxBytes: 1500 });
  await store.save(KEY_A, 'env-1', writes(Buffer.alloc(1000, 1)));
  await cache.lease(KEY_A, 'run-live');
  // B would take the cache past its cap; A is held by a live run, so B itself goes.
  const b = await store.save(KEY_B, 'env-2', writes(Buffer.alloc(1000, 2)));
  expect(b).toMatchObject({
    saved: false,
    why: expect.stringContaining('full of images and snapshots that live runs use'),
  });
  expect(existsSync(path.join(dir, 'entries', KEY_B))).toBe(false);
  expect(existsSync(path.join(dir, 'entries', KEY_A))).toBe(true);
  await cache.releaseLease(KEY_A, 'run-live');
  expect(await store.save(KEY_B, 'env-2', writes(Buffer.alloc(1000, 2)))).toMatchObject({
    saved: true,
    evicted: [`snapshot ${KEY_A.slice(0, 12)}`],
  });
  expect(existsSync(path.join(dir, 'entries', KEY_A))).toBe(false);
  expect(existsSync(path.join(dir, 'entries', KEY_B))).toBe(true);

  const tooBig = await store.save(KEY_A, 'env-1', writes(Buffer.alloc(2000, 3)));
  expect(tooBig).toMatchObject({ saved: false, why: expect.stringContaining('larger than the image cache holds') });
  expect(existsSync(path.join(dir, 'entries', KEY_A))).toBe(false);
});
