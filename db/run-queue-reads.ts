import type { EntityManager } from 'typeorm';
import type { RunQueueSnapshot } from '../core/metrics';

/** QUEUED: admission by its team's quota has not let it in yet. */
const FOR_ADMISSION = `r.state = 'QUEUED'`;
/** INPROGRESS without a workspace yet: admitted, it waits for a worker with a free run slot to provision it. */
const FOR_WORKER = `r.state = 'INPROGRESS' AND w.run_id IS NULL`;

/**
 * The unfinished runs at a glance: those waiting (for admission, for a worker) and the longest
 * wait of each kind, those INPROGRESS, and the longest silence of a run that works on a
 * workspace (a run waiting for child runs of its own is not silent: its children are measured).
 * and the runs BLOCKED (waiting for a person). Reads the unfinished runs only (the partial index
 * `runs_team_unfinished`), with one index
 * probe each for its workspace and, for one that works, its newest transcript entry.
 */
export async function readRunQueue(manager: EntityManager): Promise<RunQueueSnapshot> {
  const [row] = (await manager.query(
    `SELECT count(*) FILTER (WHERE ${FOR_ADMISSION})::int AS for_admission,
            count(*) FILTER (WHERE ${FOR_WORKER})::int AS for_worker,
            coalesce(extract(epoch FROM clock_timestamp() - min(r.queued_at) FILTER (WHERE ${FOR_ADMISSION})), 0)::float8
              AS oldest_for_admission,
            coalesce(extract(epoch FROM clock_timestamp()
              - min(greatest(r.started_at, r.queued_at)) FILTER (WHERE ${FOR_WORKER})), 0)::float8 AS oldest_for_worker,
            count(*) FILTER (WHERE r.state = 'INPROGRESS')::int AS in_progress,
            count(*) FILTER (WHERE r.state = 'BLOCKED')::int AS blocked,
            coalesce(extract(epoch FROM clock_timestamp() - min(last.created_at)), 0)::float8 AS longest_silence
       FROM runs r
       LEFT JOIN run_workspaces w ON w.run_id = r.run_id
       LEFT JOIN LATERAL (
         SELECT e.created_at FROM run_events e
          WHERE e.run_id = r.run_id AND r.state = 'INPROGRESS' AND w.run_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = r.run_id AND c.state IN ('QUEUED', 'INPROGRESS'))
          ORDER BY e.id DESC LIMIT 1
       ) last ON true
      WHERE r.state IN ('QUEUED', 'INPROGRESS', 'BLOCKED')`,
  )) as {
    for_admission: number;
    for_worker: number;
    oldest_for_admission: number;
    oldest_for_worker: number;
    in_progress: number;
    blocked: number;
    longest_silence: number;
  }[];
  return {
    waiting: {
      admission: { runs: row!.for_admission, oldestSeconds: row!.oldest_for_admission },
      worker: { runs: row!.for_worker, oldestSeconds: row!.oldest_for_worker },
    },
    inProgress: row!.in_progress,
    blocked: row!.blocked,
    longestSilenceSeconds: row!.longest_silence,
  };
}
