import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, readFile, rename, rm, rmdir, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { diskUsageBytes } from '../sandbox/run-disk';
import type { ImageProcessConfig } from './unpack-image';

/** An unpacked image in the cache: one directory per digest, read-only to every run that uses it. */
export interface CachedImage extends ImageProcessConfig {
  digest: string;
  /** The root filesystem runs get as `/`. */
  rootfs: string;
  /** Bytes the unpacked image takes on disk. */
  diskBytes: number;
  downloadBytes: number;
  platform: string;
}

/**
 * An environment's setup snapshot: its workspace and home after setup, as one tar layer
 * (`layer.tar`, content-addressed by `layerDigest`), under the key of everything it came from.
 */
export interface CachedSnapshot {
  key: string;
  environment: string;
  layerDigest: string;
  /** Bytes of the layer, which is what the entry takes on disk. */
  diskBytes: number;
  createdAt: string;
}

const IMAGE_RECORD = 'image.json';
const SNAPSHOT_RECORD = 'snapshot.json';
export const SNAPSHOT_LAYER = 'layer.tar';

/**
 * A pull holds its digest's lock for minutes, renewing it every 2 s; a worker killed mid-pull
 * leaves one that is stale 10 s later. A lock lost to staleness (a worker's event loop stalled for
 * 10 s) lets a second pull of the digest start: it removes the first one's staging directory, so
 * that pull fails and is tried again; an entry still only ever appears whole, by rename.
 */
const LOCK_TIMING = { stale: 10_000, update: 2_000, realpath: false, onCompromised: () => undefined };

/**
 * The directories of the image cache (IMAGE_CACHE_DIR), shared by the workers of one machine:
 *
 *   entries/<hex>/rootfs, image.json   complete images; an entry appears by one rename, whole
 *   entries/<key>/layer.tar, snapshot.json   environments' setup snapshots, the same way
 *   staging/<hex>.<random>/            a pull in progress (removed by the next pull of that digest)
 *   leases/<hex>/<run id>              runs using an image: eviction never removes a leased one
 *   locks/<hex>                        proper-lockfile: one pull, lease check or eviction of a digest at a time
 *   trash/                             evicted entries on their way out
 *
 * The entry directory's mtime is when a run last started on it (least recently used goes first).
 */
export class ImageCache {
  private readonly lockOptions;

  /** @param lockWaitSeconds how long a pull, lease check or eviction waits for a digest's lock */
  constructor(
    readonly dir: string,
    lockWaitSeconds: number,
  ) {
    this.lockOptions = { ...LOCK_TIMING, retries: { retries: lockWaitSeconds, minTimeout: 50, maxTimeout: 1000 } };
  }

  private sub(...parts: string[]): string {
    return path.join(this.dir, ...parts);
  }

  async open(): Promise<void> {
    // The sandbox uid reaches rootfs directories by name; nothing here is listable to it.
    for (const d of ['', 'entries', 'staging', 'leases', 'locks', 'trash']) {
      await mkdir(this.sub(d), { recursive: true });
      // The image tools' uid reaches its own staging directory by name.
      await chmod(this.sub(d), d === '' || d === 'entries' || d === 'staging' ? 0o711 : 0o700);
    }
    for (const name of await readdir(this.sub('trash')))
      await rm(this.sub('trash', name), { recursive: true, force: true });
    // A crashed pull's or snapshot's leftovers, unless a worker of this machine is at it now.
    for (const name of await readdir(this.sub('staging'))) {
      const hex = name.split('.')[0]!;
      const busy = await lockfile.check(this.sub('locks', hex), LOCK_TIMING).catch(() => true);
      if (!busy) await rm(this.sub('staging', name), { recursive: true, force: true });
    }
  }

  /** Runs `fn` holding the digest's lock (across the workers of this machine). */
  async withLock<T>(hex: string, fn: () => Promise<T>): Promise<T> {
    const release = await lockfile.lock(this.sub('locks', hex), this.lockOptions);
    try {
      return await fn();
    } finally {
      await release().catch(() => undefined);
    }
  }

  /** The complete entry of a digest, or undefined. */
  async find(digest: string): Promise<CachedImage | undefined> {
    return this.record<CachedImage>(hexOf(digest), IMAGE_RECORD);
  }

  /** The complete snapshot under a key, or undefined. */
  findSnapshot(key: string): Promise<CachedSnapshot | undefined> {
    return this.record<CachedSnapshot>(key, SNAPSHOT_RECORD);
  }

  entryDir(hex: string): string {
    return this.sub('entries', hex);
  }

  private async record<T>(hex: string, name: string): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(path.join(this.sub('entries', hex), name), 'utf8')) as T;
    } catch {
      return undefined;
    }
  }

  /** Marks the image used now (for least-recently-used eviction). */
  async touch(digestOrKey: string): Promise<void> {
    const now = new Date();
    await utimes(this.sub('entries', hexOf(digestOrKey)), now, now).catch(() => undefined);
  }

  async lease(digest: string, runId: string): Promise<void> {
    await mkdir(this.sub('leases', hexOf(digest)), { recursive: true });
    await writeFile(this.sub('leases', hexOf(digest), runId), '');
  }

  /** Drops the run's lease of one entry. */
  async releaseLease(hex: string, runId: string): Promise<void> {
    await rm(this.sub('leases', hex, runId), { force: true });
    // Not left behind for every key ever looked up; one that another run holds stays.
    await rmdir(this.sub('leases', hex)).catch(() => undefined);
  }

  /** Bytes of the entries some run holds (eviction cannot free them). */
  async leasedBytes(): Promise<number> {
    let total = 0;
    for (const hex of await readdir(this.sub('leases')).catch(() => [] as string[])) {
      if (!(await this.leased(hex))) continue;
      const record = (await this.find(`sha256:${hex}`)) ?? (await this.findSnapshot(hex));
      total += record?.diskBytes ?? 0;
    }
    return total;
  }

  /** Every complete snapshot in the cache. */
  async listSnapshots(): Promise<CachedSnapshot[]> {
    const snapshots: CachedSnapshot[] = [];
    for (const hex of await readdir(this.sub('entries'))) {
      const snapshot = await this.findSnapshot(hex);
      if (snapshot) snapshots.push(snapshot);
    }
    return snapshots;
  }

  /** Drops every lease of the run (its workspace is gone). */
  async release(runId: string): Promise<void> {
    const digests = await readdir(this.sub('leases')).catch(() => [] as string[]);
    for (const hex of digests) await rm(this.sub('leases', hex, runId), { force: true });
  }

  /** The runs that hold a lease on some image. */
  async leaseHolders(): Promise<string[]> {
    const holders = new Set<string>();
    for (const hex of await readdir(this.sub('leases')).catch(() => [] as string[])) {
      for (const runId of await readdir(this.sub('leases', hex)).catch(() => [] as string[])) holders.add(runId);
    }
    return [...holders];
  }

  private async leased(hex: string): Promise<boolean> {
    return (await readdir(this.sub('leases', hex)).catch(() => [] as string[])).length > 0;
  }

  /** A fresh staging directory for a pull of `digest` (or a snapshot); leftovers of an earlier one of it (a crash) go first. Call under the lock. */
  async stage(digest: string): Promise<string> {
    const hex = hexOf(digest);
    for (const name of await readdir(this.sub('staging'))) {
      if (name.startsWith(`${hex}.`)) await rm(this.sub('staging', name), { recursive: true, force: true });
    }
    const dir = this.sub('staging', `${hex}.${randomBytes(6).toString('hex')}`);
    await mkdir(dir, { recursive: true, mode: 0o711 });
    return dir;
  }

  /**
   * The directory of a stage the image tools write, owned by their uid when given. The stage
   * itself stays the worker's: the tools can neither rename nor replace what is in it.
   */
  async toolDirectory(stage: string, owner: number | undefined): Promise<string> {
    const dir = path.join(stage, 'work');
    await mkdir(dir, { mode: 0o700 });
    if (owner !== undefined) await chown(dir, owner, owner);
    return dir;
  }

  /** Makes a staged bundle the digest's entry, in one rename. Call under the lock. */
  async commit(
    digest: string,
    bundleDir: string,
    image: Omit<CachedImage, 'rootfs' | 'diskBytes'>,
  ): Promise<CachedImage> {
    const entry = this.sub('entries', hexOf(digest));
    const rootfs = path.join(entry, 'rootfs');
    const diskBytes = await this.diskUsage(path.join(bundleDir, 'rootfs'));
    const complete: CachedImage = { ...image, rootfs, diskBytes };
    await writeFile(path.join(bundleDir, IMAGE_RECORD), JSON.stringify(complete));
    await chmod(bundleDir, 0o711);
    await chmod(path.join(bundleDir, 'rootfs'), 0o755);
    // Not made by this class (it renames whole entries), but never trusted or built upon either.
    if (existsSync(entry) && !(await this.find(digest))) await this.discard(entry);
    try {
      await rename(bundleDir, entry);
    } catch (err) {
      // Another worker committed it meanwhile (its lock went stale under load): theirs is as good.
      const theirs = await this.find(digest);
      if (!theirs) throw err;
      return theirs;
    }
    return complete;
  }

  /** Makes a staged snapshot (its layer written) the key's entry, replacing an older one. Call under the lock. */
  async commitSnapshot(staged: string, snapshot: CachedSnapshot): Promise<void> {
    const entry = this.sub('entries', snapshot.key);
    await writeFile(path.join(staged, SNAPSHOT_RECORD), JSON.stringify(snapshot));
    await chmod(staged, 0o700);
    if (existsSync(entry)) await this.discard(entry);
    await rename(staged, entry);
  }

  /** Removes an entry no run holds (a snapshot too old or damaged); false when one does. Call under the lock. */
  async removeUnleased(hex: string): Promise<boolean> {
    if (await this.leased(hex)) return false;
    if (existsSync(this.sub('entries', hex))) await this.discard(this.sub('entries', hex));
    return true;
  }

  private async discard(dir: string): Promise<void> {
    const trash = this.sub('trash', `${path.basename(dir)}.${randomBytes(6).toString('hex')}`);
    await rename(dir, trash);
    await rm(trash, { recursive: true, force: true });
  }

  /** Bytes the unpacked bundle would take (for the cap check before it is committed). */
  diskUsage(dir: string): Promise<number> {
    return diskUsageBytes([dir]);
  }

  /**
   * Removes least recently used images and snapshots until the cache holds at most `maxBytes`;
   * leased ones (a live run's) are never removed. Returns the digests and keys removed.
   */
  async evict(maxBytes: number): Promise<string[]> {
    const entries: { hex: string; name: string; bytes: number; used: number }[] = [];
    for (const hex of await readdir(this.sub('entries'))) {
      const image = await this.find(`sha256:${hex}`);
      const record = image ?? (await this.findSnapshot(hex));
      const name = image ? `sha256:${hex}` : `snapshot ${hex.slice(0, 12)}`;
      const info = await stat(this.sub('entries', hex)).catch(() => undefined);
      if (record && info) entries.push({ hex, name, bytes: record.diskBytes, used: info.mtimeMs });
    }
    let total = entries.reduce((sum, e) => sum + e.bytes, 0);
    const removed: string[] = [];
    for (const candidate of entries.sort((a, b) => a.used - b.used)) {
      if (total <= maxBytes) break;
      const gone = await this.withLock(candidate.hex, async () => {
        if (await this.leased(candidate.hex)) return false;
        const trash = this.sub('trash', `${candidate.hex}.${randomBytes(6).toString('hex')}`);
        await rename(this.sub('entries', candidate.hex), trash).catch(() => undefined);
        await rmdir(this.sub('leases', candidate.hex)).catch(() => undefined);
        return existsSync(trash) ? trash : false;
      });
      if (!gone) continue;
      await rm(gone, { recursive: true, force: true });
      total -= candidate.bytes;
      removed.push(candidate.name);
    }
    return removed;
  }
}

export function hexOf(digest: string): string {
  return digest.replace(/^sha256:/, '');
}
