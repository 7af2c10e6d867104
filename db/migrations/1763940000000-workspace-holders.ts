import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where each run's workspace lives, durably: `run_workspaces` names the worker (its WORKER_ID and
 * workspace queue) and the workspace's id, so a worker's sweep can tell its own live workspaces
 * from those it abandoned, and a returning worker can tell whether it still holds a run's.
 * `runs.worker_id` shows it on the run. `runs.workflow_started`: false from the API's insert
 * until the run's workflow is known to exist, so that a create cut off between its commit and its
 * workflow's start is never listed.
 */
export class WorkspaceHolders1763940000000 implements MigrationInterface {
  name = 'WorkspaceHolders1763940000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE run_workspaces (
        run_id uuid PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        worker_id text NOT NULL,
        workspace_queue text NOT NULL,
        workspace_id uuid NOT NULL,
        -- host:directory of the workspace: workers that share a directory leave each other's alone
        workspace_root text NOT NULL,
        provisioned_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX run_workspaces_worker ON run_workspaces (workspace_queue)`);
    await q.query(`ALTER TABLE runs ADD COLUMN worker_id text`);
    await q.query(`ALTER TABLE runs ADD COLUMN workflow_started boolean NOT NULL DEFAULT true`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN workflow_started`);
    await q.query(`ALTER TABLE runs DROP COLUMN worker_id`);
    await q.query(`DROP TABLE run_workspaces`);
  }
}
