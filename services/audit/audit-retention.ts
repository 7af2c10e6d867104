import type { DataSource } from 'typeorm';
import { auditEventsPruned } from '../../core/metrics';
import { pruneAuditEvents, teamsWithAuditEventsBefore } from '../../db/audit-events';

const DAY_MS = 86_400_000;

/**
 * Deletes audit events older than `days`, oldest first, `batch` at a time per team (each its own
 * short transaction), for at most `teamsPerCall` teams: what one maintenance activity call does.
 * `more` says whether another call has work.
 */
export async function pruneExpiredAuditEvents(
  dataSource: DataSource,
  days: number,
  { batch = 5000, teamsPerCall = 20 }: { batch?: number; teamsPerCall?: number } = {},
): Promise<{ pruned: number; more: boolean }> {
  const cutoff = new Date(Date.now() - days * DAY_MS);
  const teams = await teamsWithAuditEventsBefore(dataSource.manager, cutoff);
  let pruned = 0;
  for (const teamId of teams.slice(0, teamsPerCall)) {
    const deleted = await pruneAuditEvents(dataSource.manager, teamId, cutoff, batch);
    pruned += deleted;
  }
  auditEventsPruned.inc(pruned);
  return { pruned, more: teams.length > 0 && pruned > 0 };
}
