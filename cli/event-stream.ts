import { setTimeout as delay } from 'node:timers/promises';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ApiProblem, ApiUnreachable, toProblem, type ApiClient } from './api-client';
import type { RunEvent } from './wire';

/** What to do after an event: go on, stop now, or stop unless another event comes within the time given. */
export type EventDirective = 'continue' | 'stop' | { stopIfQuietForMs: number };

export interface StreamRunEventsOptions {
  /** Only events after this event id (`Last-Event-ID`); from the first event when absent. */
  afterId?: string;
  /**
   * Stop when no event has come for this long after the last one: the end of what the run has
   * recorded so far. (Every run has recorded its prompt, so the first event is waited for longer.)
   */
  quietStopMs?: number;
  signal?: AbortSignal;
  onEvent(event: RunEvent): EventDirective | void | Promise<EventDirective | void>;
  /** Told before each reconnection, with the id it resumes after. */
  onReconnect?(info: { afterId: string | undefined; attempt: number; reason: string }): void;
}

export interface StreamOutcome {
  /** `end`: the server closed the stream for good; `stopped`: the caller stopped; `quiet`: no event for the time asked. */
  reason: 'end' | 'stopped' | 'quiet';
  /** The id of the last event passed on. */
  lastId: string | undefined;
  /** The `end` event's data (`{run_id, state}`). */
  end?: { run_id?: string; state?: string };
}

/** Consecutive connections that deliver nothing before the stream is given up. */
const MAX_FAILED_CONNECTIONS = 8;
/** A connection that carries not even a heartbeat for this long is taken for dead and replaced. */
const STALL_MS = 90_000;
/** How long a stream stopped by `quietStopMs` waits for its first event. */
const FIRST_EVENT_MS = 15_000;
/** Reconnection delay when the server has not said (`retry:`). */
const DEFAULT_RETRY_MS = 3000;

const isLater = (id: string, than: string | undefined) => than === undefined || BigInt(id) > BigInt(than);

function parseEvent(message: EventSourceMessage): RunEvent | undefined {
  let data: Partial<RunEvent>;
  try {
    data = JSON.parse(message.data) as Partial<RunEvent>;
  } catch {
    return undefined;
  }
  const id = message.id ?? (data.id === undefined ? undefined : String(data.id));
  if (id === undefined || !/^\d+$/.test(id) || typeof data !== 'object' || data === null) return undefined;
  return {
    id,
    run_id: String(data.run_id ?? ''),
    kind: typeof data.kind === 'string' ? data.kind : (message.event ?? 'message'),
    turn: Number(data.turn ?? 0),
    created_at: String(data.created_at ?? ''),
    payload: data.payload && typeof data.payload === 'object' ? data.payload : {},
  };
}

interface StreamState {
  lastId: string | undefined;
  retryMs: number;
  received: number;
  end?: StreamOutcome['end'];
}

type ConnectionOutcome = 'end' | 'stopped' | 'quiet' | 'closed';

/** An error of the caller's `onEvent`: passed on as it is, never mistaken for a dropped connection. */
class HandlerError extends Error {
  constructor(readonly original: unknown) {
    super('onEvent failed');
  }
}

/** Reads one connection's events until it ends, is stopped, goes quiet, or drops (`closed`, or a thrown error). */
async function readConnection(
  body: AsyncIterable<Uint8Array>,
  connection: AbortController,
  state: StreamState,
  options: StreamRunEventsOptions,
): Promise<ConnectionOutcome> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({
    onEvent: (message) => queue.push(message),
    onRetry: (ms) => (state.retryMs = ms),
  });
  const decoder = new TextDecoder();
  let quietTimer: NodeJS.Timeout | undefined;
  let wentQuiet = false;
  const armQuiet = (ms: number | undefined) => {
    clearTimeout(quietTimer);
    if (ms === undefined) return;
    quietTimer = setTimeout(() => {
      wentQuiet = true;
      connection.abort();
    }, ms);
  };
  let stallTimer: NodeJS.Timeout | undefined;
  const armStall = () => {
    clearTimeout(stallTimer);
    stallTimer = setTimeout(() => connection.abort(), STALL_MS);
  };
  armQuiet(options.quietStopMs === undefined ? undefined : state.received > 0 ? options.quietStopMs : FIRST_EVENT_MS);
  armStall();
  try {
    for await (const chunk of body) {
      armStall();
      parser.feed(decoder.decode(chunk, { stream: true }));
      while (queue.length > 0) {
        const message = queue.shift()!;
        if (message.event === 'end') {
          try {
            state.end = JSON.parse(message.data) as StreamOutcome['end'];
          } catch {
            state.end = {};
          }
          return 'end';
        }
        const event = parseEvent(message);
        // A resumed stream never repeats what was passed on already.
        if (!event || !isLater(event.id, state.lastId)) continue;
        state.lastId = event.id;
        state.received++;
        armQuiet(undefined);
        let directive: EventDirective | void;
        try {
          directive = await options.onEvent(event);
        } catch (err) {
          throw new HandlerError(err);
        }
        if (directive === 'stop') return 'stopped';
        armQuiet(typeof directive === 'object' ? directive.stopIfQuietForMs : options.quietStopMs);
      }
    }
    return 'closed';
  } catch (err) {
    if (err instanceof HandlerError) throw err;
    if (wentQuiet) return 'quiet';
    if (options.signal?.aborted) return 'stopped';
    if (connection.signal.aborted) return 'closed'; // stalled
    throw err;
  } finally {
    clearTimeout(quietTimer);
    clearTimeout(stallTimer);
    connection.abort();
  }
}

/**
 * Follows `GET /agent/runs/{id}/events` (Server-Sent Events), passing each transcript event on
 * once and in order. A connection that drops before the server's `end` is resumed with
 * `Last-Event-ID`; an error answer other than a transient one (a 404 for another team's run)
 * is thrown as its `ApiProblem`.
 */
export async function streamRunEvents(
  client: ApiClient,
  runId: string,
  options: StreamRunEventsOptions,
): Promise<StreamOutcome> {
  const state: StreamState = { lastId: options.afterId, retryMs: DEFAULT_RETRY_MS, received: 0 };
  let failures = 0;
  for (let attempt = 0; ; attempt++) {
    if (options.signal?.aborted) return { reason: 'stopped', lastId: state.lastId };
    const connection = new AbortController();
    const stop = () => connection.abort();
    options.signal?.addEventListener('abort', stop, { once: true });
    const receivedBefore = state.received;
    let failure: Error;
    try {
      const res = await client.send('GET', `/agent/runs/${encodeURIComponent(runId)}/events`, {
        accept: 'text/event-stream',
        headers: state.lastId !== undefined ? { 'Last-Event-ID': state.lastId } : {},
        signal: connection.signal,
      });
      if (!res.ok) throw await toProblem(res);
      if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream') || !res.body) {
        await res.body?.cancel();
        throw new ApiProblem(res.status, 'The service did not answer with an event stream.', undefined, undefined);
      }
      const outcome = await readConnection(
        res.body as unknown as AsyncIterable<Uint8Array>,
        connection,
        state,
        options,
      );
      if (outcome !== 'closed') return { reason: outcome, lastId: state.lastId, end: state.end };
      failure = new ApiUnreachable('The event stream closed before the run ended.');
    } catch (err) {
      if (err instanceof HandlerError) throw err.original;
      if (options.signal?.aborted) return { reason: 'stopped', lastId: state.lastId };
      const transient =
        err instanceof ApiUnreachable ||
        (err instanceof ApiProblem ? err.transient : err instanceof TypeError || (err as Error).name === 'AbortError');
      if (!transient) throw err;
      failure = err as Error;
    } finally {
      options.signal?.removeEventListener('abort', stop);
    }
    if (state.received > receivedBefore) failures = 0;
    else if (++failures >= MAX_FAILED_CONNECTIONS) throw failure;
    // The first retry is at once (a proxy cut the stream); then the server's `retry`, doubling.
    const wait = failures === 0 ? 200 : Math.min(state.retryMs * 2 ** (failures - 1), 30_000);
    options.onReconnect?.({ afterId: state.lastId, attempt: attempt + 1, reason: failure.message });
    await delay(wait, undefined, { signal: options.signal }).catch(() => undefined);
  }
}
