import type { EntityManager } from 'typeorm';

export interface PendingFollowup {
  seq: number;
  message: string;
  mode: string;
  createdAt: Date;
}

/** Up to `limit` of a run's recorded, not yet delivered follow-ups after sequence number `afterSeq`, in order. */
export async function loadPendingFollowupsPage(
  manager: EntityManager,
  runId: string,
  page: { afterSeq: number; limit: number },
): Promise<PendingFollowup[]> {
  const rows = (await manager.query(
    `SELECT seq, message, mode, created_at FROM followups
      WHERE run_id = $1 AND delivered_at IS NULL AND seq > $2 ORDER BY seq LIMIT $3`,
    [runId, page.afterSeq, page.limit],
  )) as { seq: number; message: string; mode: string; created_at: Date }[];
  return rows.map((r) => ({ seq: r.seq, message: r.message, mode: r.mode, createdAt: r.created_at }));
}

/**
 * The `mode` of the run's newest message in the conversation: its newest delivered follow-up, or
 * else its prompt ('normal' when neither says).
 */
export async function latestMessageMode(manager: EntityManager, runId: string): Promise<string> {
  const [row] = (await manager.query(
    `SELECT COALESCE(
       (SELECT mode FROM followups WHERE run_id = $1 AND delivered_at IS NOT NULL ORDER BY seq DESC LIMIT 1),
       (SELECT payload->>'mode' FROM run_events WHERE run_id = $1 AND event_key = 'prompt'),
       'normal') AS mode`,
    [runId],
  )) as { mode: string }[];
  return row?.mode ?? 'normal';
}
