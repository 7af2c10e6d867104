import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import { eventStreamsRefused } from '../core/metrics';
import type { RunEventKind } from '../core/run-events';
import type { StoredRunEvent } from '../db/run-event-reads';
import { ApiError } from '../core/api-error';
import { CAP_NAMES, CAPPED_RETRY_SECONDS, streamCounter } from './run-event-stream-caps';
import { startStream, STREAM_HEADERS, type RunEventStreamsOptions, type StreamRequest } from './run-event-stream-loop';

export { lastEventIdOf, parseStreamStart } from './run-event-stream-start';
export type { RunEventStreamsOptions, StreamRequest } from './run-event-stream-loop';

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
  approval: true,
  skill_load: true,
  context_summary: true,
  pull_request: true,
  config: true,
};
export const RUN_EVENT_KINDS = Object.keys(KINDS) as RunEventKind[];

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
