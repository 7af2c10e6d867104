import type { EntityManager } from 'typeorm';

/**
 * Marks agent step `stepKey` of the run as running (`runs.step_in_flight`) and says whether an
 * earlier attempt of it was interrupted: it had marked the same step and never cleared it.
 */
export async function claimStepAttempt(manager: EntityManager, runId: string, stepKey: string): Promise<boolean> {
  // TypeORM answers an UPDATE with [rows, count].
  const [rows] = (await manager.query(
    `UPDATE runs r SET step_in_flight = $2
       FROM (SELECT step_in_flight AS before FROM runs WHERE run_id = $1 FOR UPDATE) previous
      WHERE r.run_id = $1
      RETURNING previous.before`,
    [runId, stepKey],
  )) as [{ before: string | null }[], number];
  return rows[0]?.before === stepKey;
}

/** The attempt of `stepKey` ended (done, or failed in a way it reported): nothing to resume. */
export async function releaseStepAttempt(manager: EntityManager, runId: string, stepKey: string): Promise<void> {
  await manager.query(`UPDATE runs SET step_in_flight = NULL WHERE run_id = $1 AND step_in_flight = $2`, [
    runId,
    stepKey,
  ]);
}
