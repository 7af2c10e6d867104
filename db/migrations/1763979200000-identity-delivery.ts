import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agent identities get their own `delivery` (a run's `config.delivery`, merged field by field
 * under the run's own and over its environment's), as they got `approval` (migration 1763978500000).
 */
export class IdentityDelivery1763979200000 implements MigrationInterface {
  name = 'IdentityDelivery1763979200000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_identities ADD COLUMN IF NOT EXISTS delivery jsonb`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_identities DROP COLUMN IF EXISTS delivery`);
  }
}
