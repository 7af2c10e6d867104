import type { EntityManager } from 'typeorm';
import type { RunEventPayloads } from '../core/run-events';
import { PAST_LAST_ID, runEventsRange } from './run-event-reads';

export interface RecordedContextSummary {
  eventKey: string;
  payload: RunEventPayloads['context_summary'];
}

/** The newest summary of older exchanges a run's steps recorded, if any. */
export async function latestContextSummary(
  manager: EntityManager,
  runId: string,
): Promise<RecordedContextSummary | undefined> {
  // Newest first through (run_id, id): the entries read are the run's own since its last summary.
  const range = runEventsRange('before');
  const [row] = (await manager.query(
    `SELECT event_key, payload FROM run_events
      WHERE ${range.where} AND kind = 'context_summary' ORDER BY ${range.orderBy} LIMIT 1`,
    [runId, PAST_LAST_ID],
  )) as { event_key: string; payload: RunEventPayloads['context_summary'] }[];
  return row && { eventKey: row.event_key, payload: row.payload };
}
