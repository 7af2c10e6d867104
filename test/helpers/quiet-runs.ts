import type { DataSource } from 'typeorm';

/**
 * The reconciler sweeps every unfinished run in the shared database, and a run that another test
 * file created a moment ago may not have its workflow yet. So a test that runs a pass makes its
 * own runs look quiet for `hours` and passes a quiet window that no other file's live run reaches
 * (a file lasts minutes), instead of a window of 0 that takes in everyone's runs.
 */
export async function backdateRuns(dataSource: DataSource, runIds: string[], hours: number): Promise<void> {
  await dataSource.query(
    `UPDATE runs SET updated_at = now() - make_interval(hours => $2) WHERE run_id = ANY($1::uuid[])`,
    [runIds, hours],
  );
}
