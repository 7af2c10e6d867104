import { createHash, type Hash } from 'node:crypto';
import { mib } from '../../core/human-units';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../../core/config';
import { SNAPSHOT_LAYER, type CachedSnapshot, type ImageCache } from './image-cache';

export type SnapshotRestore =
  | { restored: true; snapshot: CachedSnapshot }
  | { restored: false; why: 'none' | 'expired' | 'in use' }
  | { restored: false; why: 'damaged'; detail: string; removed: boolean };

export type SnapshotSave =
  { saved: true; snapshot: CachedSnapshot; evicted: string[]; replaced: number } | { saved: false; why: string };

class LayerTooLarge extends Error {}

/**
 * Environments' setup snapshots, kept in the image cache beside the images (same cap, same
 * least-recently-used eviction, same locks): each is one tar layer of a run's workspace and home
 * right after its setup, named by the key of everything that setup came from. An environment
 * keeps its newest snapshot only.
 */
export class SnapshotStore {
  constructor(
    private readonly cache: ImageCache,
    private readonly open: () => Promise<void>,
    private readonly config: Pick<Config['images'], 'cacheMaxBytes' | 'snapshotMaxAgeMs'>,
  ) {}

  private fresh(snapshot: CachedSnapshot): boolean {
    return Date.now() - Date.parse(snapshot.createdAt) <= this.config.snapshotMaxAgeMs;
  }

  /**
   * Gives `extract` the layer of the key's snapshot, if there is a fresh one whose layer still
   * matches its digest (checked before a byte is extracted; a damaged one is removed), holding a
   * lease on it meanwhile. An `extract` that fails throws; the snapshot stays.
   */
  async restore(key: string, runId: string, extract: (layer: Readable) => Promise<void>): Promise<SnapshotRestore> {
    await this.open();
    await this.cache.lease(key, runId);
    try {
      const found = await this.cache.withLock(key, async () => {
        const snapshot = await this.cache.findSnapshot(key);
        if (!snapshot) return { snapshot: undefined, why: 'none' as const };
        if (this.fresh(snapshot)) return { snapshot };
        // Too old: removed unless another run is restoring it right now.
        await this.cache.releaseLease(key, runId);
        const removed = await this.cache.removeUnleased(key);
        return { snapshot: undefined, why: removed ? ('expired' as const) : ('in use' as const) };
      });
      if (!found.snapshot) return { restored: false, why: found.why };
      await this.cache.touch(key);
      const file = path.join(this.cache.entryDir(key), SNAPSHOT_LAYER);
      const digest = await fileDigest(file);
      if (digest !== found.snapshot.layerDigest) {
        await this.cache.releaseLease(key, runId);
        const removed = await this.cache.withLock(key, () => this.cache.removeUnleased(key));
        return {
          restored: false,
          why: 'damaged',
          detail: `its layer is ${digest}, not ${found.snapshot.layerDigest}`,
          removed,
        };
      }
      const layer = createReadStream(file);
      try {
        await extract(layer);
      } finally {
        layer.destroy();
      }
      return { restored: true, snapshot: found.snapshot };
    } finally {
      await this.cache.releaseLease(key, runId);
    }
  }

  /**
   * Keeps what `create` writes (a tar of the workspace and home) as the key's snapshot, unless
   * another run kept one meanwhile, the layer would not fit beside what live runs hold (the tar
   * is stopped as soon as it passes that), or `stillCurrent` says the workspace changed hands
   * while it was made. The environment's older snapshots go.
   */
  async save(
    key: string,
    environment: string,
    create: (layer: Writable) => Promise<void>,
    stillCurrent: () => Promise<boolean>,
  ): Promise<SnapshotSave> {
    await this.open();
    const outcome = await this.cache.withLock(key, async (): Promise<SnapshotSave> => {
      const existing = await this.cache.findSnapshot(key);
      if (existing && this.fresh(existing)) {
        return { saved: false, why: 'another run of this environment kept one meanwhile' };
      }
      if (existing && !(await this.cache.removeUnleased(key))) {
        return { saved: false, why: 'a run is restoring the older snapshot' };
      }
      const room = this.config.cacheMaxBytes - (await this.cache.leasedBytes());
      const staged = await this.cache.stage(key);
      try {
        const hash = createHash('sha256');
        let bytes = 0;
        const hashing = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            bytes += chunk.length;
            if (bytes > room) return done(new LayerTooLarge());
            hash.update(chunk);
            done(null, chunk);
          },
        });
        const file = createWriteStream(path.join(staged, SNAPSHOT_LAYER), { mode: 0o600 });
        try {
          await Promise.all([
            create(hashing).catch((err: unknown) => {
              hashing.destroy(err as Error);
              throw err;
            }),
            pipeline(hashing, file),
          ]);
        } catch (err) {
          if (bytes <= room) throw err;
          return {
            saved: false,
            why: `its layer passed ${mib(Math.max(0, room))}, what the image cache (IMAGE_CACHE_MAX_BYTES, ${mib(this.config.cacheMaxBytes)}) has room for beside what live runs use`,
          };
        }
        if (!(await stillCurrent())) {
          return { saved: false, why: 'the workspace was provisioned again while it was being kept' };
        }
        const diskBytes = (await stat(path.join(staged, SNAPSHOT_LAYER))).size;
        const snapshot: CachedSnapshot = {
          key,
          environment,
          layerDigest: `sha256:${hash.digest('hex')}`,
          diskBytes,
          createdAt: new Date().toISOString(),
        };
        await this.cache.commitSnapshot(staged, snapshot);
        return { saved: true, snapshot, evicted: [], replaced: 0 };
      } finally {
        await rm(staged, { recursive: true, force: true });
      }
    });
    if (!outcome.saved) return outcome;
    let replaced = 0;
    for (const older of await this.cache.listSnapshots()) {
      if (older.environment !== environment || older.key === key) continue;
      if (await this.cache.withLock(older.key, () => this.cache.removeUnleased(older.key))) replaced += 1;
    }
    return { ...outcome, replaced, evicted: await this.cache.evict(this.config.cacheMaxBytes) };
  }

  /**
   * Removes snapshots past ENVIRONMENT_SNAPSHOT_MAX_AGE_HOURS and those of environments that
   * `exists` says are gone (none a run is restoring). Returns the keys removed.
   */
  async removeUnneeded(exists: (environments: string[]) => Promise<Set<string>>): Promise<string[]> {
    await this.open();
    const snapshots = await this.cache.listSnapshots();
    if (snapshots.length === 0) return [];
    const live = await exists([...new Set(snapshots.map((s) => s.environment))]);
    const removed: string[] = [];
    for (const snapshot of snapshots) {
      if (this.fresh(snapshot) && live.has(snapshot.environment)) continue;
      if (await this.cache.withLock(snapshot.key, () => this.cache.removeUnleased(snapshot.key)))
        removed.push(snapshot.key);
    }
    return removed;
  }
}

async function fileDigest(file: string): Promise<string> {
  const hash: Hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}
