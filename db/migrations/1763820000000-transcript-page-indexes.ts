import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pages of a transcript (the transcript page, the conversation endpoint) read only their own rows:
 * a run's entries in id order, and a run's undelivered follow-ups without its delivered ones.
 */
export class TranscriptPageIndexes1763820000000 implements MigrationInterface {
  name = 'TranscriptPageIndexes1763820000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX run_events_run_id ON run_events (run_id, id)`);
    await q.query(`CREATE INDEX followups_pending ON followups (run_id, seq) WHERE delivered_at IS NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX followups_pending`);
    await q.query(`DROP INDEX run_events_run_id`);
  }
}
