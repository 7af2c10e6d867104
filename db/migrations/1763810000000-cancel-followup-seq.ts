import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The last follow-up sequence number a cancel request saw: follow-ups up to it were sent before
 * the cancel (they wait for the run to continue), later ones continue the run at once.
 */
export class CancelFollowupSeq1763810000000 implements MigrationInterface {
  name = 'CancelFollowupSeq1763810000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN cancel_followup_seq integer`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN cancel_followup_seq`);
  }
}
