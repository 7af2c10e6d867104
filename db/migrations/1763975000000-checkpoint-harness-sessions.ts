import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A fork of a CLI harness run continues the source's CLI session as of its checkpoint.
 * `checkpoints.harness_session_id`: the session (Claude Code, Gemini CLI) or thread (Codex) of the
 * run's CLI when the checkpoint was taken, whose files the checkpoint's home holds; null for a run
 * without one then (and for checkpoints taken before this migration).
 * `run_harness_state.session_inherited`: the run's `session_id` is its fork source's, not yet
 * continued by its own CLI (Claude Code then resumes it under a new id).
 */
export class CheckpointHarnessSessions1763975000000 implements MigrationInterface {
  name = 'CheckpointHarnessSessions1763975000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE checkpoints ADD COLUMN harness_session_id text`);
    await q.query(`ALTER TABLE run_harness_state ADD COLUMN session_inherited boolean NOT NULL DEFAULT false`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_harness_state DROP COLUMN session_inherited`);
    await q.query(`ALTER TABLE checkpoints DROP COLUMN harness_session_id`);
  }
}
