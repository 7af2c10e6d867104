import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { DataSource } from 'typeorm';
import type { StreamCaps } from '../core/config';
import type { Logger } from '../core/logger';
import { eventStreamsOpen, eventStreamsRefused } from '../core/metrics';
import type { RunEventKind } from '../core/run-events';
import { isTerminal } from '../core/run-state';
import { loadRunEventsAfter, runIdleWindow, type StoredRunEvent } from '../db/run-events';
import { ApiError, invalid } from '../core/api-error';
import { singleQueryParameter } from './page-params';
import type { RunEventNotifier } from './run-event-notifier';

/** Every kind of transcript entry, as a stream names its events (a new kind fails to compile until listed). */
const KINDS: Record<RunEventKind, true> = {
  prompt: true,
  followup: true,
  assistant: true,
  tool_call_started: true,
  tool_call: true,
  command: true,
  files_changed: true,
  state: true,
  notice: true,
  skill_load: true,
  context_summary: true,
  config: true,
};
export const RUN_EVENT_KINDS = Object.keys(KINDS) as RunEventKind[];

/** What a stream reads at once: entries, and about this much of their JSON (a command's output may be 1 MiB). */
const PAGE = { limit: 100, maxBytes: 1024 * 1024 };
/** The client's reconnection delay, sent first. */
const RETRY_MS = 3000;

const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-store',
  'X-Accel-Buffering': 'no',
  // The connection is not reused after a stream: a shutting-down server is then left with none.
  Connection: 'close',
};

type Query = Record<string, string | string[] | undefined>;

/** The `Last-Event-ID` header as sent (an empty one too), or undefined when there is none. */
export function lastEventIdOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['last-event-id'];
  return Array.isArray(value) ? value.join(',') : value;
}

/**
 * Where a stream starts: after the event id of `?after=` or else of the `Last-Event-ID` header
 * (what an EventSource sends when it reconnects); from the first event without either.
 */
export function parseStreamStart(query: Query, lastEventId: string | undefined): string {
  const after = singleQueryParameter(query, 'after');
  // Compared in SQL as a bigint: a value out of its range must not reach the query. Each one
  // given is checked, even when `after` wins, so that a malformed request never streams.
  const check = (name: string, value: string) => {
    if (!/^\d{1,18}$/.test(value)) {
      throw invalid(`${name} must be an event id, a non-negative integer of at most 18 digits (got "${value}").`);
    }
  };
  if (lastEventId !== undefined) check('Header `Last-Event-ID`', lastEventId);
  if (after !== undefined) check('Query parameter `after`', after);
  return after ?? lastEventId ?? '0';
}

/** The `data` of an entry: the same for the API and the transcript page (which adds its HTML). */
export function eventData(runId: string, event: StoredRunEvent): Record<string, unknown> {
  return {
    id: event.id,
    run_id: runId,
    kind: event.kind,
    turn: event.turn,
    created_at: event.createdAt.toISOString(),
    payload: event.payload,
  };
}

export interface StreamRequest {
  runId: string;
  /** The event id to start after ('0': from the first). */
  afterId: string;
  /** Each entry's `data`, in order: secrets masked, whatever the reader needs added. */
  present(events: StoredRunEvent[]): Promise<Record<string, unknown>[]>;
}

export interface RunEventStreams {
  /**
   * Answers the request with the run's transcript as Server-Sent Events, from PostgreSQL: the
   * entries after `afterId`, then each new one as it is committed, until the run has ended and
   * its idle window has passed (`end`), the client leaves, or the server shuts down.
   */
  serve(ctx: Context, request: StreamRequest): Promise<void>;
  /** Ends every open stream (clients reconnect elsewhere with `Last-Event-ID`) and stops listening. */
  close(): Promise<void>;
}

export interface RunEventStreamsOptions {
  dataSource: DataSource;
  notifier: RunEventNotifier;
  heartbeatSeconds: number;
  logger: Logger;
  /** How many streams may be open at once; past a cap a new one is 429. Unlimited when absent. */
  caps?: StreamCaps;
}

/** How long a client refused at a cap is asked to wait. */
const CAPPED_RETRY_SECONDS = 5;

/** Counts open streams in all, per client address and per run; says which cap a new one would pass. */
function streamCounter(caps: StreamCaps | undefined) {
  const byClient = new Map<string, number>();
  const byRun = new Map<string, number>();
  let total = 0;
  const bump = (map: Map<string, number>, key: string, by: number) => {
    const next = (map.get(key) ?? 0) + by;
    if (next > 0) map.set(key, next);
    else map.delete(key);
  };
  return {
    /** The cap that refuses a new stream, or undefined after counting it in. */
    open(client: string, runId: string): keyof StreamCaps | undefined {
      if (caps) {
        if ((byClient.get(client) ?? 0) >= caps.perClient) return 'perClient';
        if ((byRun.get(runId) ?? 0) >= caps.perRun) return 'perRun';
        if (total >= caps.total) return 'total';
      }
      bump(byClient, client, 1);
      bump(byRun, runId, 1);
      total++;
      eventStreamsOpen.inc();
      return undefined;
    },
    close(client: string, runId: string): void {
      bump(byClient, client, -1);
      bump(byRun, runId, -1);
      total--;
      eventStreamsOpen.dec();
    },
  };
}

const CAP_NAMES = {
  perClient: { metric: 'client', variable: 'SSE_MAX_STREAMS_PER_CLIENT', what: 'from your address' },
  perRun: { metric: 'run', variable: 'SSE_MAX_STREAMS_PER_RUN', what: 'of this run' },
  total: { metric: 'total', variable: 'SSE_MAX_STREAMS', what: 'in all' },
} as const;

/** The event streams of one API process. */
export function createRunEventStreams(options: RunEventStreamsOptions): RunEventStreams {
  const open = new Map<ServerResponse, { stop(): void; done: Promise<void> }>();
  const counter = streamCounter(options.caps);
  let closing = false;

  return {
    async serve(ctx, request) {
      if (closing) {
        throw new ApiError('resource_unavailable', 'The server is shutting down; reconnect.', {
          headers: { 'Retry-After': '1' },
        });
      }
      // Koa stays out of the way: the status keeps the error middleware from taking it for a 404.
      ctx.status = 200;
      if (ctx.method === 'HEAD') {
        ctx.set(STREAM_HEADERS);
        return;
      }
      const capped = counter.open(ctx.ip, request.runId);
      if (capped) {
        const cap = CAP_NAMES[capped];
        eventStreamsRefused.inc({ cap: cap.metric });
        throw new ApiError(
          'rate_limited',
          `Too many event streams open ${cap.what} (${cap.variable}); close one, or retry in ${CAPPED_RETRY_SECONDS} seconds.`,
          { headers: { 'Retry-After': String(CAPPED_RETRY_SECONDS) } },
        );
      }
      try {
        ctx.respond = false;
        const stream = startStream(ctx.res, request, options);
        open.set(ctx.res, stream);
        try {
          await stream.done;
        } finally {
          open.delete(ctx.res);
        }
      } finally {
        counter.close(ctx.ip, request.runId);
      }
    },
    async close() {
      closing = true;
      const streams = [...open.values()];
      for (const s of streams) s.stop();
      await Promise.all(streams.map((s) => s.done));
      await options.notifier.close();
    },
  };
}

function startStream(
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
