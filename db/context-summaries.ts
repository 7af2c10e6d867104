import type { EntityManager } from 'typeorm';
import type { RunEventPayloads } from '../core/run-events';

/** The newest summary of older exchanges a run's steps recorded, if any. */
export async function latestContextSummary(
  manager: EntityManager,
  runId: string,
): Promise<{ eventKey: string; payload: RunEventPayloads['context_summary'] } | undefined> {
  const [row] = (await manager.query(
    `SELECT event_key, payload FROM run_events WHERE run_id = $1 AND kind = 'context_summary' ORDER BY id DESC LIMIT 1`,
    [runId],
  )) as { event_key: string; payload: RunEventPayloads['context_summary'] }[];
  return row && { eventKey: row.event_key, payload: row.payload };
}
