import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../../core/config';
import { SNAPSHOT_LAYER, type CachedSnapshot, type ImageCache } from './image-cache';

export type SnapshotRestore =
  { restored: true; snapshot: CachedSnapshot } | { restored: false; why: 'none' | 'expired' | 'in use' };

export type SnapshotSave = { saved: true; snapshot: CachedSnapshot; evicted: string[] } | { saved: false; why: string };

/**
 * Environments' setup snapshots, kept in the image cache beside the images (same cap, same
 * least-recently-used eviction, same locks): each is one tar layer of a run's workspace and home
 * right after its setup, named by the key of everything that setup came from.
 */
export class SnapshotStore {
  constructor(
    private readonly cache: ImageCache,
    private readonly open: () => Promise<void>,
    private readonly config: Pick<Config['images'], 'cacheMaxBytes' | 'snapshotMaxAgeMs'>,
  ) {}

  /**
   * Gives `extract` the layer of the key's snapshot, if there is a fresh one, holding a lease on
   * it meanwhile. The layer is checked against its digest as it streams: a damaged one, or one
   * that fails to unpack, is removed and the restore throws (the workspace is half-written;
   * provisioning starts again, without it).
   */
  async restore(
    key: string,
    runId: string,
    extract: (layer: Readable) => Promise<void>,
    signal?: AbortSignal,
  ): Promise<SnapshotRestore> {
    await this.open();
    await this.cache.lease(key, runId);
    try {
      const found = await this.cache.withLock(key, async () => {
        const snapshot = await this.cache.findSnapshot(key);
        if (!snapshot) return { snapshot: undefined, why: 'none' as const };
        if (Date.now() - Date.parse(snapshot.createdAt) <= this.config.snapshotMaxAgeMs) return { snapshot };
        // Too old: removed unless another run is restoring it right now.
        await this.cache.releaseLease(key, runId);
        const removed = await this.cache.removeUnleased(key);
        return { snapshot: undefined, why: removed ? ('expired' as const) : ('in use' as const) };
      });
      if (!found.snapshot) return { restored: false, why: found.why };
      await this.cache.touch(key);
      const hash = createHash('sha256');
      const hashing = hashingStream(hash);
      const layer = createReadStream(path.join(this.cache.entryDir(key), SNAPSHOT_LAYER));
      layer.on('error', (err) => hashing.destroy(err));
      let problem: string | undefined;
      try {
        await extract(layer.pipe(hashing));
        const digest = `sha256:${hash.digest('hex')}`;
        if (digest !== found.snapshot.layerDigest)
          problem = `its layer is ${digest}, not ${found.snapshot.layerDigest}`;
      } catch (err) {
        if (signal?.aborted) throw err;
        problem = (err as Error).message;
      }
      if (problem) {
        // Never tried again as it is: the next provisioning runs setup and keeps a new one.
        await this.cache.releaseLease(key, runId);
        await this.cache.withLock(key, () => this.cache.removeUnleased(key));
        throw new Error(`could not restore the setup snapshot ${key.slice(0, 12)} (${problem}); it was removed`);
      }
      return { restored: true, snapshot: found.snapshot };
    } finally {
      await this.cache.releaseLease(key, runId);
    }
  }

  /**
   * Keeps what `create` writes (a tar of the workspace and home) as the key's snapshot, unless
   * another run kept one meanwhile. A layer over IMAGE_CACHE_MAX_BYTES is not kept.
   */
  async save(key: string, environment: string, create: (layer: Writable) => Promise<void>): Promise<SnapshotSave> {
    await this.open();
    const outcome = await this.cache.withLock(key, async (): Promise<SnapshotSave> => {
      const existing = await this.cache.findSnapshot(key);
      if (existing && Date.now() - Date.parse(existing.createdAt) <= this.config.snapshotMaxAgeMs) {
        return { saved: false, why: 'another run of this environment kept one meanwhile' };
      }
      if (existing && !(await this.cache.removeUnleased(key))) {
        return { saved: false, why: 'a run is restoring the older snapshot' };
      }
      const staged = await this.cache.stage(key);
      try {
        const hash = createHash('sha256');
        const hashing = hashingStream(hash);
        const file = createWriteStream(path.join(staged, SNAPSHOT_LAYER), { mode: 0o600 });
        await Promise.all([
          create(hashing).catch((err: unknown) => {
            hashing.destroy(err as Error);
            throw err;
          }),
          pipeline(hashing, file),
        ]);
        const diskBytes = (await stat(path.join(staged, SNAPSHOT_LAYER))).size;
        if (diskBytes > this.config.cacheMaxBytes) {
          return {
            saved: false,
            why: `its layer (${(diskBytes / 1024 / 1024).toFixed(1)} MiB) is larger than the image cache holds (IMAGE_CACHE_MAX_BYTES)`,
          };
        }
        const snapshot: CachedSnapshot = {
          key,
          environment,
          layerDigest: `sha256:${hash.digest('hex')}`,
          diskBytes,
          createdAt: new Date().toISOString(),
        };
        await this.cache.commitSnapshot(staged, snapshot);
        return { saved: true, snapshot, evicted: [] };
      } finally {
        await rm(staged, { recursive: true, force: true });
      }
    });
    if (!outcome.saved) return outcome;
    const evicted = await this.cache.evict(this.config.cacheMaxBytes);
    if (evicted.includes(`snapshot ${key.slice(0, 12)}`)) {
      return {
        saved: false,
        why: 'the image cache is full of images and snapshots that live runs use (IMAGE_CACHE_MAX_BYTES)',
      };
    }
    return { ...outcome, evicted };
  }
}

/** Passes bytes through, adding them to `hash`. */
function hashingStream(hash: Hash): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
}
