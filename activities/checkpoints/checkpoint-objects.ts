import { contentKey, type ObjectStore } from '../../infra/object-store/object-store';
import type { ContentRef } from '../../services/checkpoints/checkpoint-manifest';

/** Files up to this size go into packs: a step's small files cost one object, not one each. */
const PACK_FILE_MAX_BYTES = 256 * 1024;
/** A pack is stored once it reaches this size. */
const PACK_BYTES = 16 * 1024 * 1024;
/** Larger files are stored as chunks of this size, each by its content: a file that changed in one place stores one chunk. */
const CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Stores the bytes of a checkpoint's files in the object store: small files packed together, the
 * others in content-addressed chunks (a chunk already there, from any run, is not stored again).
 * `objects` are those the checkpoint's entries name (what holds them against garbage collection),
 * `addedBytes` what it stored anew. A file's pack is known once the pack is stored: `finish`
 * stores the last one, after which every ContentRef it returned is complete. Packs and objects
 * of their own are stored in the background (a pack's key is its content's, known at once):
 * `stored` resolves once everything is.
 */
export class CheckpointObjects {
  readonly objects: { key: string; size: number }[] = [];
  addedBytes = 0;
  private pack: Buffer[] = [];
  private packBytes = 0;
  private waiting: { pack: string; offset: number }[] = [];
  private readonly storing: Promise<void>[] = [];

  constructor(private readonly store: ObjectStore) {}

  /** Stores a file's bytes (exactly `size` of them, read from `body`); returns where they are. */
  async file(body: AsyncIterable<Buffer>, size: number): Promise<ContentRef> {
    if (size <= PACK_FILE_MAX_BYTES) {
      const bytes = Buffer.concat(await collect(body));
      const ref = { pack: '', offset: this.packBytes };
      this.pack.push(bytes);
      this.packBytes += bytes.length;
      this.waiting.push(ref);
      // A full pack is stored before the walk goes on: no more than one in memory.
      if (this.packBytes >= PACK_BYTES) await this.storePack();
      return ref;
    }
    const chunks: string[] = [];
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    for await (const piece of body) {
      pending.push(piece);
      pendingBytes += piece.length;
      while (pendingBytes >= CHUNK_BYTES) {
        const all = Buffer.concat(pending);
        chunks.push(await this.storeChunk(all.subarray(0, CHUNK_BYTES)));
        pending = [all.subarray(CHUNK_BYTES)];
        pendingBytes = all.length - CHUNK_BYTES;
      }
    }
    if (pendingBytes > 0) chunks.push(await this.storeChunk(Buffer.concat(pending)));
    return { chunks };
  }

  /** Stores an object of its own (a manifest) and counts it as added; returns its key at once. */
  object(bytes: Buffer): string {
    const key = contentKey(bytes);
    const putting = this.store.put(key, bytes);
    // Awaited by `stored`; never an unhandled rejection meanwhile.
    putting.catch(() => undefined);
    this.storing.push(putting);
    this.objects.push({ key, size: bytes.length });
    this.addedBytes += bytes.length;
    return key;
  }

  finish(): void {
    void this.storePack();
  }

  /** Resolves once every object is stored; rejects with the first that could not be. */
  async stored(): Promise<void> {
    await Promise.all(this.storing);
  }

  private storePack(): Promise<void> {
    if (this.pack.length === 0) return Promise.resolve();
    const key = this.object(Buffer.concat(this.pack));
    for (const ref of this.waiting) ref.pack = key;
    this.pack = [];
    this.packBytes = 0;
    this.waiting = [];
    return this.storing[this.storing.length - 1]!;
  }

  private async storeChunk(bytes: Buffer): Promise<string> {
    const key = contentKey(bytes);
    if (!this.objects.some((o) => o.key === key)) this.objects.push({ key, size: bytes.length });
    if (!(await this.store.has(key))) {
      await this.store.put(key, Buffer.from(bytes));
      this.addedBytes += bytes.length;
    }
    return key;
  }
}

async function collect(body: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const pieces: Buffer[] = [];
  for await (const piece of body) pieces.push(piece);
  return pieces;
}
