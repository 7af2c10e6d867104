import { open, type FileHandle } from 'node:fs/promises';

/** How long an empty read waits before the next one: short while output flows, longer while it does not. */
const FIRST_WAIT_MS = 5;
const LONGEST_WAIT_MS = 100;
const CHUNK_BYTES = 64 * 1024;
/**
 * The most of a file followed: its writer can make it sparse and terabytes long with one
 * ftruncate (next to nothing on disk, so within the run's disk limit), which must not keep
 * anyone reading. Far more than any output a reader keeps (a harness's transcript and raw log).
 */
export const MAX_FOLLOWED_BYTES = 256 * 1024 * 1024;

/**
 * Follows a file another process appends to (a process's standard output, kept on disk), handing
 * each new chunk to `onChunk` as it is read. `finish` reads to the end once the writer is done.
 * Unlike a pipe, the file can be reopened by its writer through /dev/stdout; a truncation is
 * noticed at the next read that finds nothing new (content that grew past the old end by then is
 * read from there). Past MAX_FOLLOWED_BYTES, reading stops.
 */
export class FileTail {
  private file?: FileHandle;
  private position = 0;
  /** Bytes handed on in all: a file truncated and written again counts again. */
  private taken = 0;
  private stopping = false;
  private wake?: () => void;
  private readonly loop: Promise<void>;

  constructor(
    private readonly path: string,
    private readonly onChunk: (chunk: Buffer) => void,
  ) {
    this.loop = this.follow();
    // Heard by `finish`; until then a failed open must not be an unhandled rejection.
    this.loop.catch(() => undefined);
  }

  /** Reads what is left once the writer has ended, then closes the file; rejects if reading failed. */
  async finish(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
  }

  private async follow(): Promise<void> {
    this.file = await open(this.path, 'r');
    try {
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      let wait = FIRST_WAIT_MS;
      for (;;) {
        // Decided before the read: a read that finds nothing after `finish` was called is the end.
        const last = this.stopping;
        const room = MAX_FOLLOWED_BYTES - this.taken;
        if (room <= 0) return;
        const { bytesRead } = await this.file.read(buffer, 0, Math.min(CHUNK_BYTES, room), this.position);
        if (bytesRead > 0) {
          this.position += bytesRead;
          this.taken += bytesRead;
          this.onChunk(Buffer.from(buffer.subarray(0, bytesRead)));
          wait = FIRST_WAIT_MS;
          continue;
        }
        if (last) return;
        // Made shorter (a process reopened /dev/stdout with `>`, which truncates): what it holds
        // now was written since, from its start.
        if ((await this.file.stat()).size < this.position) this.position = 0;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
        wait = Math.min(wait * 2, LONGEST_WAIT_MS);
      }
    } finally {
      await this.file.close();
    }
  }
}
