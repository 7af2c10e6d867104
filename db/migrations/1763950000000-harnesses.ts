import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Third-party harnesses. `managed_secrets`: a team's named credentials (a Claude Code or Codex
 * key), encrypted under the secrets key and never returned. `run_harness_state`: per run worked
 * by a CLI, the CLI's session to resume and the latest cumulative usage it reported.
 */
export class Harnesses1763950000000 implements MigrationInterface {
  name = 'Harnesses1763950000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE managed_secrets (
        id uuid PRIMARY KEY,
        team_id uuid NOT NULL,
        name text NOT NULL,
        kind text NOT NULL,
        description text,
        -- enc:v1:… (core/secrets.ts)
        encrypted_value text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        UNIQUE (team_id, name)
      )`);
    await q.query(`
      CREATE TABLE run_harness_state (
        run_id uuid PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        harness text NOT NULL,
        session_id text,
        -- the last prompt or follow-up (run_events.id) handed to the CLI: each is handed over once
        prompted_through bigint NOT NULL DEFAULT 0,
        -- t<turn>-s<step> of the invocation last started, and of the last one that finished
        started_step text,
        finished_step text,
        usage jsonb,
        tool_calls jsonb,
        cost_usd numeric,
        capture_sequence integer NOT NULL DEFAULT 0,
        execution_id integer NOT NULL DEFAULT 0,
        captured_at timestamptz(3)
      )`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_harness_state`);
    await q.query(`DROP TABLE managed_secrets`);
  }
}
