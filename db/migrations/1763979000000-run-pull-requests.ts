import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pull requests a run delivered (`config.delivery.pull_request`): one row per run and repository,
 * whatever is retried (the key), holding the branch the worker pushed, the last commit it pushed
 * (`head_sha`: the next push goes on from it, and never over someone else's), and the pull
 * request once the forge opened it (`number`, `url`), with its `status` as the forge last said it
 * (its webhooks, or a poll). Each row is a `PULL_REQUEST` artifact of the run (`artifact_uid`).
 * `error_code` and `error_message` keep why the last delivery failed, when it did.
 */
export class RunPullRequests1763979000000 implements MigrationInterface {
  name = 'RunPullRequests1763979000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS run_pull_requests (
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        repository text NOT NULL,
        team_id uuid NOT NULL,
        artifact_uid uuid NOT NULL UNIQUE,
        forge text NOT NULL CHECK (forge IN ('github', 'gitlab', 'gitea')),
        host text NOT NULL,
        owner text NOT NULL,
        name text NOT NULL,
        branch text NOT NULL,
        base text NOT NULL,
        head_sha text,
        number integer,
        url text,
        status text NOT NULL DEFAULT 'unknown' CHECK (status IN ('open', 'draft', 'merged', 'closed', 'unknown')),
        status_checked_at timestamptz(3),
        error_code text,
        error_message text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (run_id, repository)
      )`);
    // run-by-external-reference?url=, and a forge's webhook naming its pull request.
    await q.query(`CREATE INDEX IF NOT EXISTS run_pull_requests_url ON run_pull_requests (url) WHERE url IS NOT NULL`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS run_pull_requests_forge_number ON run_pull_requests (host, owner, name, number) WHERE number IS NOT NULL`,
    );
    await q.query(`CREATE INDEX IF NOT EXISTS run_pull_requests_team ON run_pull_requests (team_id)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS run_pull_requests`);
  }
}
