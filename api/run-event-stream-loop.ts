import type { ServerResponse } from 'node:http';
import type { DataSource } from 'typeorm';
import type { StreamCaps } from '../core/config';
import type { Logger } from '../core/logger';
import { isTerminal } from '../core/run-state';
import { loadRunEventsAfter, runIdleWindow, type StoredRunEvent } from '../db/run-event-reads';
import type { RunEventNotifier } from './run-event-notifier';

/** One stream: a run's entries from PostgreSQL as Server-Sent Events, then each new one as it commits. */

/** What a stream reads at once: entries, and about this much of their JSON (a command's output may be 1 MiB). */
const PAGE = { limit: 100, maxBytes: 1024 * 1024 };
/** The client's reconnection delay, sent first. */
const RETRY_MS = 3000;

export const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-store',
  'X-Accel-Buffering': 'no',
  // The connection is not reused after a stream: a shutting-down server is then left with none.
  Connection: 'close',
};

export interface StreamRequest {
  runId: string;
  /** The event id to start after ('0': from the first). */
  afterId: string;
  /** Each entry's `data`, in order: secrets masked, whatever the reader needs added. */
  present(events: StoredRunEvent[]): Promise<Record<string, unknown>[]>;
  /** When the stream ends whatever the run does: its key's expiry. */
  endsAt?: Date;
}

export interface RunEventStreamsOptions {
  dataSource: DataSource;
  notifier: RunEventNotifier;
  heartbeatSeconds: number;
  logger: Logger;
  /** How many streams may be open at once; past a cap a new one is 429. Unlimited when absent. */
  caps?: StreamCaps;
}

export function startStream(
  res: ServerResponse,
  request: StreamRequest,
  { dataSource, notifier, heartbeatSeconds, logger }: RunEventStreamsOptions,
): { stop(): void; done: Promise<void> } {
  const manager = dataSource.manager;
  // A client that has not taken what was written within two heartbeats is gone or too slow: drop it
  // rather than hold its backlog in memory.
  const stallMs = 2 * heartbeatSeconds * 1000;
  let lastId = BigInt(request.afterId);
  let closed = false;
  let woken = false;
  let resume: (() => void) | undefined;
  let stallTimer: NodeJS.Timeout | undefined;

  const wake = () => {
    woken = true;
    resume?.();
  };
  const finish = () => {
    closed = true;
    clearTimeout(stallTimer);
    wake();
  };
  res.on('close', finish);

  /** Writes a chunk; past the socket's high-water mark the client has `stallMs` to take it. */
  const write = (chunk: string): boolean => {
    if (closed) return false;
    const flowing = res.write(chunk);
    if (!flowing && !stallTimer) {
      stallTimer = setTimeout(() => {
        logger.info('event stream dropped: the client does not read', { run_id: request.runId });
        res.destroy();
      }, stallMs);
      res.once('drain', () => {
        clearTimeout(stallTimer);
        stallTimer = undefined;
      });
    }
    return flowing;
  };
  /** Writes a chunk and waits until the client has taken it (or is gone): one page is all a stream buffers. */
  const send = async (chunk: string): Promise<void> => {
    if (write(chunk) || closed) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };
  /** Until a new entry is announced, `ms` pass, or the stream closes. */
  const idle = (ms: number | undefined) =>
    new Promise<void>((resolve) => {
      if (woken || closed) return resolve();
      const timer = ms === undefined ? undefined : setTimeout(() => resume?.(), Math.min(ms, 2 ** 31 - 1));
      resume = () => {
        clearTimeout(timer);
        resume = undefined;
        resolve();
      };
    });

  const unsubscribe = notifier.subscribe(request.runId, (id) => {
    if (id === undefined || id > lastId) wake();
  });
  const heartbeat = setInterval(() => {
    if (!res.writableNeedDrain) write(': ping\n\n');
  }, heartbeatSeconds * 1000);
  const expiry = request.endsAt && endAt(request.endsAt, finish);

  const loop = async () => {
    res.writeHead(200, STREAM_HEADERS);
    await send(`retry: ${RETRY_MS}\n\n`);
    while (!closed) {
      woken = false;
      // Read before the entries: once a terminal state shows here, its entry is among those read next.
      const status = await runIdleWindow(manager, request.runId);
      let delivered = false;
      // A run's entries commit in id order (migration 1763920000000): none can still appear below lastId.
      for (let more = true; more && !closed;) {
        const page = await loadRunEventsAfter(manager, request.runId, lastId.toString(), PAGE);
        const data = page.events.length ? await request.present(page.events) : [];
        for (const [i, event] of page.events.entries()) {
          if (closed) return;
          await send(`id: ${event.id}\nevent: ${event.kind}\ndata: ${JSON.stringify(data[i])}\n\n`);
          lastId = BigInt(event.id);
          delivered = true;
        }
        more = page.more;
      }
      if (!status || closed) return;
      // What was just sent may have committed after `status` was read (a terminal state among it,
      // whose wake-up is now behind lastId): decide only on a status read after everything sent.
      if (delivered) continue;
      const ended = isTerminal(status.state);
      if (ended && (status.leftMs ?? 0) <= 0) {
        await send(`event: end\ndata: ${JSON.stringify({ run_id: request.runId, state: status.state })}\n\n`);
        return;
      }
      // Within its idle window a follow-up may continue the run (its state entry wakes the stream).
      await idle(ended ? (status.leftMs ?? 0) : undefined);
    }
  };

  const done = loop()
    .catch((err: unknown) => {
      // The client reconnects with Last-Event-ID after `retry`, to this instance or another.
      logger.warn('event stream failed', { run_id: request.runId, error: err });
    })
    .finally(() => {
      unsubscribe();
      clearInterval(heartbeat);
      expiry?.cancel();
      clearTimeout(stallTimer);
      res.off('close', finish);
      if (!res.destroyed && !res.writableEnded) res.end();
    });
  return {
    stop() {
      // A client that is not taking what was written would hold the shutdown until it is dropped.
      if (res.writableNeedDrain) res.destroy();
      finish();
    },
    done,
  };
}

/** Calls `end` at `at` (at once if it has passed), however far off: a timer waits at most about 24 days. */
function endAt(at: Date, end: () => void): { cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const left = at.getTime() - Date.now();
    if (left <= 0) return end();
    timer = setTimeout(arm, Math.min(left, 2 ** 31 - 1));
  };
  arm();
  return { cancel: () => clearTimeout(timer) };
}
