import { createHash } from 'node:crypto';
import type { RunState } from '../../core/run-state';
import type { StoredRunEvent } from '../../db/run-event-reads';

export type TimelineEventType =
  | 'oz_run_created'
  | 'oz_run_claimed'
  | 'oz_run_blocked'
  | 'worker_container_ready'
  | 'agent_started'
  | 'oz_run_done'
  | 'oz_run_cancelled'
  | 'oz_run_failed'
  | 'oz_run_errored';

export interface TimelineEvent {
  event_type: TimelineEventType;
  event_uuid: string;
  occurred_at: string;
  run_id: string;
  execution_id: number;
  payload: Record<string, unknown>;
}

const ENDED: Partial<Record<RunState, TimelineEventType>> = {
  SUCCEEDED: 'oz_run_done',
  FAILED: 'oz_run_failed',
  ERROR: 'oz_run_errored',
  CANCELLED: 'oz_run_cancelled',
};

/** A stable UUID for one event of the timeline (the same on every read). */
function eventUuid(runId: string, what: string): string {
  const h = createHash('sha256').update(`${runId}\n${what}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * `GET /agent/runs/{id}/timeline`, built from what the run recorded: created; then per turn
 * (`execution_id`) claimed (INPROGRESS), its workspace ready (when the turn made one; with the
 * image it runs on, `image_reference` and `image_digest`, when it runs on one), the agent
 * started (its setup, or the turn's start when the workspace was already there), blocked each
 * time a call waited for a person, and how the turn ended. A run still queued has only its creation.
 * A pull request's events (`pull_request`) are not here: the clients' timeline types are the
 * run's setup and lifecycle, and none says "pull request" (naming one `oz_run_done` would tell a
 * client the run ended again); the event stream, the transcript and the artifacts carry them.
 */
export function runTimeline(run: { runId: string; createdAt: Date; source: string }, entries: StoredRunEvent[]) {
  const events: TimelineEvent[] = [];
  const add = (type: TimelineEventType, what: string, at: Date, turn: number, payload: Record<string, unknown>) =>
    events.push({
      event_type: type,
      event_uuid: eventUuid(run.runId, what),
      occurred_at: at.toISOString(),
      run_id: run.runId,
      execution_id: turn,
      payload,
    });
  add('oz_run_created', 'created', run.createdAt, 1, { source: run.source });
  const turnsWithSetup = new Set(entries.filter((e) => e.kind === 'config').map((e) => e.turn));
  for (const entry of entries) {
    const { turn } = entry;
    if (entry.kind === 'state') {
      const state = entry.payload.state as RunState;
      if (state === 'BLOCKED') {
        add('oz_run_blocked', `blocked-${entry.id}`, entry.createdAt, turn, {
          turn,
          approval_id: entry.eventKey.slice(`state-t${turn}-BLOCKED-`.length),
          ...(entry.payload.status_message ? { status_message: entry.payload.status_message } : {}),
        });
      }
      // Working again after BLOCKED is the same claim of the turn, not a new one.
      if (state === 'INPROGRESS' && !entry.payload.resumed) {
        add('oz_run_claimed', `claimed-${entry.id}`, entry.createdAt, turn, { turn });
        if (!turnsWithSetup.has(turn)) add('agent_started', `started-${entry.id}`, entry.createdAt, turn, { turn });
      }
      const ended = ENDED[state];
      if (ended) {
        add(ended, `ended-${entry.id}`, entry.createdAt, turn, {
          turn,
          state,
          ...(entry.payload.status_message ? { status_message: entry.payload.status_message } : {}),
        });
      }
    } else if (entry.kind === 'notice') {
      const { message, image_reference, image_digest } = entry.payload;
      add('worker_container_ready', `workspace-${entry.id}`, entry.createdAt, turn, {
        turn,
        message,
        ...(image_digest ? { image_reference, image_digest } : {}),
      });
    } else if (entry.kind === 'config') {
      add('agent_started', `started-${entry.id}`, entry.createdAt, turn, {
        turn,
        model_id: entry.payload.model_id,
        ...(entry.payload.environment_id ? { environment_id: entry.payload.environment_id } : {}),
      });
    }
  }
  return { events };
}
