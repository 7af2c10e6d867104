import type { DataSource } from 'typeorm';
import { newSessionId, newUuidV7 } from '../../core/ids';

/**
 * Inserts a copy of run `template`'s row under a new id, with `overrides`, and no workflow
 * behind it: rows as a failed create or a lost workflow leave them, or a run only the test
 * writes to. Not ended and without a status message unless `overrides` says otherwise.
 */
export async function insertRunCopy(
  dataSource: DataSource,
  template: string,
  overrides: Record<string, unknown>,
): Promise<string> {
  const runId = newUuidV7();
  await dataSource.query(
    `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || $2::jsonb)).* FROM runs r WHERE run_id = $1`,
    [
      template,
      JSON.stringify({ run_id: runId, session_id: newSessionId(), ended_at: null, status_message: null, ...overrides }),
    ],
  );
  return runId;
}
