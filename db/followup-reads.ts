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
