import { setTimeout as delay } from 'node:timers/promises';
import { ApiProblem, ApiUnreachable, backoffMs, type ApiClient } from './api-client';
import { streamRunEvents, type EventDirective } from './event-stream';
import { isStopState } from './exit-codes';
import type { RunEvent, RunItem } from './wire';

/**
 * How long the stream must stay quiet after a terminal state before a follower stops. Events
 * of a backlog arrive back to back, so a state that ended an earlier turn is followed at once
 * by the next turn's events; a live run writes little after its terminal state.
 */
export const SETTLE_MS = 500;
/** How long `logs` without `--follow` waits for more before it takes the transcript as complete. */
export const BACKLOG_QUIET_MS = 1000;
/** Transient failures (503, connection refused) tolerated in a row while waiting for a run. */
const WAIT_RETRIES = 30;

export function getRun(client: ApiClient, runId: string): Promise<RunItem> {
  return client.get<RunItem>(`/agent/runs/${encodeURIComponent(runId)}`);
}

/**
 * Prints a run's events as they happen (`onEvent`) until the run is in a terminal state (or
 * BLOCKED, waiting for a person), and returns it then. It does not wait for the stream's `end` (which comes only once the run's
 * idle window has passed): a terminal `state` event is checked against the run itself, which
 * tells it apart from the end of an earlier turn, or of a turn a follow-up has reopened.
 */
export async function followRun(
  client: ApiClient,
  runId: string,
  options: {
    afterId?: string;
    onEvent(event: RunEvent): void;
    onReconnect?(info: { afterId: string | undefined; reason: string }): void;
    signal?: AbortSignal;
  },
): Promise<RunItem> {
  let ended: RunItem | undefined;
  const outcome = await streamRunEvents(client, runId, {
    afterId: options.afterId,
    signal: options.signal,
    onReconnect: options.onReconnect,
    async onEvent(event): Promise<EventDirective> {
      ended = undefined;
      options.onEvent(event);
      if (event.kind !== 'state' || !isStopState(event.payload.state)) return 'continue';
      const run = await getRun(client, runId);
      if (!isStopState(run.state)) return 'continue';
      ended = run;
      return { stopIfQuietForMs: SETTLE_MS };
    },
  });
  if (outcome.reason === 'quiet' && ended) return ended;
  if (outcome.reason === 'stopped') throw new Error('Stopped.');
  // The stream ended (`end`): the run ended and its idle window passed; its state says how.
  return ended ?? (await getRun(client, runId));
}

/** The id of the last event a run has recorded so far (read from the stream up to its quiet end). */
export async function lastEventId(client: ApiClient, runId: string): Promise<string | undefined> {
  const outcome = await streamRunEvents(client, runId, { quietStopMs: BACKLOG_QUIET_MS, onEvent: () => 'continue' });
  return outcome.lastId;
}

/**
 * Polls `GET /agent/runs/{id}` until the run is in a terminal state or BLOCKED; `onChange` hears each state
 * seen. A service that is briefly unavailable (503, restarting) is waited for.
 */
export async function waitForRun(
  client: ApiClient,
  runId: string,
  onChange: (run: RunItem) => void,
  intervalMs = { first: 500, max: 3000 },
): Promise<RunItem> {
  let interval = intervalMs.first;
  let last: string | undefined;
  let failures = 0;
  for (;;) {
    let run: RunItem;
    try {
      run = await getRun(client, runId);
      failures = 0;
    } catch (err) {
      const transient = err instanceof ApiUnreachable || (err instanceof ApiProblem && err.transient);
      if (!transient || ++failures > WAIT_RETRIES) throw err;
      await delay(backoffMs(failures, err instanceof ApiProblem ? err.retryAfterSeconds : undefined));
      continue;
    }
    if (run.state !== last) {
      last = run.state;
      onChange(run);
    }
    if (isStopState(run.state)) return run;
    await delay(interval);
    interval = Math.min(interval * 1.5, intervalMs.max);
  }
}
