import type { EntityManager } from 'typeorm';
import type { RunEventKind, RunEventPayloads } from '../core/run-events';
import { storableJson } from './storable';

/** Appends a transcript entry once: a second write with the same key is a no-op. Returns whether it wrote. */
export async function appendRunEvent<K extends RunEventKind>(
  manager: EntityManager,
  event: { runId: string; eventKey: string; kind: K; turn: number; payload: RunEventPayloads[K] },
): Promise<boolean> {
  const rows = (await manager.query(INSERT_RUN_EVENT, runEventParameters(event))) as unknown[];
  return rows.length > 0;
}

/** Appends an entry once ($1–$5 from `runEventParameters`), returning its id when it wrote; `WITH` may take it in. */
export const INSERT_RUN_EVENT = `INSERT INTO run_events (run_id, event_key, kind, turn, payload)
     VALUES ($1, $2, $3, $4, $5::jsonb)
     ON CONFLICT (run_id, event_key) DO NOTHING RETURNING id`;

export function runEventParameters<K extends RunEventKind>(event: {
  runId: string;
  eventKey: string;
  kind: K;
  turn: number;
  payload: RunEventPayloads[K];
}): unknown[] {
  return [event.runId, event.eventKey, event.kind, event.turn, storableJson(event.payload)];
}

/** Appends a notice to the run's current turn (for events that happen outside a step, such as an MCP server's refused connection). */
export async function appendNoticeToCurrentTurn(
  manager: EntityManager,
  runId: string,
  eventKey: string,
  notice: RunEventPayloads['notice'],
): Promise<void> {
  await manager.query(
    `INSERT INTO run_events (run_id, event_key, kind, turn, payload)
     SELECT run_id, $2, 'notice', turn, $3::jsonb FROM runs WHERE run_id = $1
     ON CONFLICT (run_id, event_key) DO NOTHING`,
    [runId, eventKey, storableJson(notice)],
  );
}
