import type { Logger } from '../../core/logger';
import type { KeyUse } from '../../db/api-keys';

/** A key's last_used_at is written at most this often: by each API process, and by the statement across them. */
export const LAST_USED_MIN_GAP_MS = 60_000;
/** How long a noted use waits before the next look at what is due to be written. */
export const LAST_USED_FLUSH_MS = 15_000;

export interface KeyUseRecorder {
  /** Notes a use of the key now, in memory only: the request never waits for it. */
  note(keyId: string): void;
  /** Writes the noted uses of keys this process has not written within the minimum gap, in one statement. */
  flush(): Promise<void>;
  /** Stops the timer and writes every noted use (the statement still keeps each row to once a gap). */
  stop(): Promise<void>;
}

export interface KeyUseRecorderOptions {
  /** Writes uses in one statement (db/api-keys.ts recordKeysLastUsed). */
  write: (uses: KeyUse[], minGapMs: number) => Promise<void>;
  logger: Pick<Logger, 'warn'>;
  /** The clock, in epoch milliseconds. */
  now?: () => number;
  flushMs?: number;
  minGapMs?: number;
}

/**
 * Keys' last use, batched off the requests' path: a per-process map of key id to its latest use,
 * written by a timer (unref'd: it never holds the process up) at most once per minimum gap per
 * key, and on `stop`. A write that fails leaves its uses to the next one.
 */
export function createKeyUseRecorder(options: KeyUseRecorderOptions): KeyUseRecorder {
  const { write, logger, now = Date.now, flushMs = LAST_USED_FLUSH_MS, minGapMs = LAST_USED_MIN_GAP_MS } = options;
  const pending = new Map<string, number>();
  /** When this process last wrote each key's use, for those written within the gap. */
  const written = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let writing = Promise.resolve();

  /** Takes the uses to write now: every noted one (`all`), or those of keys not written within the gap. */
  const take = (all: boolean): KeyUse[] => {
    const at = now();
    for (const [keyId, writtenAt] of written) if (at - writtenAt >= minGapMs) written.delete(keyId);
    const uses: KeyUse[] = [];
    for (const [keyId, usedAt] of pending) {
      if (!all && written.has(keyId)) continue;
      pending.delete(keyId);
      written.set(keyId, at);
      uses.push({ keyId, usedAt: new Date(usedAt) });
    }
    return uses;
  };

  /** Puts back the uses of a failed write (unless a later use came meanwhile), to be written next time. */
  const restore = (uses: KeyUse[]) => {
    for (const { keyId, usedAt } of uses) {
      written.delete(keyId);
      if (!pending.has(keyId)) pending.set(keyId, usedAt.getTime());
    }
  };

  const writeTaken = (all: boolean): Promise<void> => {
    writing = writing.then(async () => {
      const uses = take(all);
      if (uses.length === 0) return;
      await write(uses, minGapMs).catch((err: unknown) => {
        restore(uses);
        logger.warn('could not record the last use of API keys; trying again later', { keys: uses.length, error: err });
      });
    });
    return writing;
  };

  const schedule = () => {
    if (timer || stopped || pending.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      void writeTaken(false).then(schedule);
    }, flushMs);
    timer.unref();
  };

  return {
    note(keyId) {
      pending.set(keyId, now());
      schedule();
    },
    flush: () => writeTaken(false),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      await writeTaken(true);
    },
  };
}
