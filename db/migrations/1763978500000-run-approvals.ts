import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approvals: one row per call of an agent that waited for a person (a tool call a run's
 * `config.approval` gates, or an `ask_user` question), keyed by where the call stands in its
 * run (turn, step, position) so that the step, run again, finds the decision. `pending` until a
 * person decides, the deadline passes or the run is cancelled; the decision is never changed.
 * Agent identities get their own `approval` policy (environments keep theirs in `config`).
 *
 * BLOCKED is unfinished: the partial index of a team's unfinished runs in admission order
 * (`runs_team_admission`, what admission and the metrics scan) is made anew to cover it, built
 * without locking writes, and the old one dropped once the new one serves.
 */
export class RunApprovals1763978500000 implements MigrationInterface {
  name = 'RunApprovals1763978500000';
  transaction = false;

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS run_approvals (
        approval_id uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        team_id uuid NOT NULL,
        turn integer NOT NULL,
        step integer NOT NULL,
        call_index integer NOT NULL,
        kind text NOT NULL CHECK (kind IN ('tool_call', 'question')),
        tool text NOT NULL,
        arguments jsonb NOT NULL,
        question text,
        requested_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        expires_at timestamptz(3) NOT NULL,
        state text NOT NULL DEFAULT 'pending'
          CHECK (state IN ('pending', 'approved', 'denied', 'timed_out', 'cancelled')),
        decided_by_uid text,
        decided_by_type text,
        decided_by_name text,
        decided_at timestamptz(3),
        comment text,
        UNIQUE (run_id, turn, step, call_index)
      )`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS run_approvals_pending ON run_approvals (team_id, requested_at) WHERE state = 'pending'`,
    );
    await q.query(`ALTER TABLE agent_identities ADD COLUMN IF NOT EXISTS approval jsonb`);
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_unfinished ON runs (team_id, queued_at, run_id)
        WHERE state IN ('QUEUED', 'INPROGRESS', 'BLOCKED')`,
    );
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_team_admission`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_admission ON runs (team_id, queued_at, run_id)
        WHERE state IN ('QUEUED', 'INPROGRESS')`,
    );
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_team_unfinished`);
    await q.query(`ALTER TABLE agent_identities DROP COLUMN IF EXISTS approval`);
    await q.query(`DROP TABLE IF EXISTS run_approvals`);
  }
}
