import { pack as tarPack, type Pack } from 'tar-stream';
import type { ObjectStore } from '../../infra/object-store/object-store';
import type { ManifestEntry } from './checkpoint-manifest';

/** Packs kept in memory while a tar is written: entries in path order reuse them. */
const PACK_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * A tar stream of a checkpoint's entries (directories, symlinks as links, files with their
 * bytes from the object store), in the order given; what `sandbox-init -restore` reads and
 * what a checkpoint's download is.
 */
export function checkpointTar(store: ObjectStore, entries: readonly ManifestEntry[]): Pack {
  const tar = tarPack();
  const packs = new PackCache(store);
  void (async () => {
    for (const entry of entries) await writeEntry(tar, entry, packs);
    tar.finalize();
  })().catch((err: unknown) => tar.destroy(err as Error));
  return tar;
}

async function writeEntry(tar: Pack, entry: ManifestEntry, packs: PackCache): Promise<void> {
  const mtime = new Date(Number(BigInt(entry.mtime) / 1_000_000n));
  const header = { name: entry.path, mode: entry.mode, mtime, pax: { mtime: paxTime(entry.mtime) } };
  if (entry.type === 'dir') return add(tar, { ...header, type: 'directory' });
  if (entry.type === 'symlink') return add(tar, { ...header, type: 'symlink', linkname: entry.target });
  const body = await packs.bytesOf(entry);
  return add(tar, { ...header, type: 'file', size: body.length }, body);
}

function add(tar: Pack, header: Parameters<Pack['entry']>[0], body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    tar.entry(header, body ?? Buffer.alloc(0), (err) => (err ? reject(err) : resolve()));
  });
}

/** `sec.nsec` from nanoseconds, as a PAX `mtime` record has it. */
function paxTime(nanoseconds: string): string {
  const ns = BigInt(nanoseconds);
  const seconds = ns / 1_000_000_000n;
  const rest = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${seconds}.${rest}`;
}

/** The pack objects read so far, the least recently used dropped past PACK_CACHE_BYTES. */
class PackCache {
  private readonly packs = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly store: ObjectStore) {}

  async bytesOf(entry: Extract<ManifestEntry, { type: 'file' }>): Promise<Buffer> {
    if ('chunks' in entry.content) {
      const chunks = await Promise.all(entry.content.chunks.map((key) => this.object(key)));
      return Buffer.concat(chunks);
    }
    const pack = await this.pack(entry.content.pack);
    return pack.subarray(entry.content.offset, entry.content.offset + entry.size);
  }

  private async pack(key: string): Promise<Buffer> {
    const cached = this.packs.get(key);
    if (cached) {
      this.packs.delete(key);
      this.packs.set(key, cached);
      return cached;
    }
    const pack = await this.object(key);
    this.packs.set(key, pack);
    this.bytes += pack.length;
    for (const [oldest, bytes] of this.packs) {
      if (this.bytes <= PACK_CACHE_BYTES || oldest === key) break;
      this.packs.delete(oldest);
      this.bytes -= bytes.length;
    }
    return pack;
  }

  private async object(key: string): Promise<Buffer> {
    const bytes = await this.store.get(key);
    if (!bytes) throw new Error(`the checkpoint's object ${key} is missing from the object store`);
    return bytes;
  }
}
