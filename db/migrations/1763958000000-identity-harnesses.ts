import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An agent identity's default harness for its runs: `harness` ({type, model_id?,
 * reasoning_level?}, null for this service's own loop) and `harness_auth_secrets` (names of the
 * team's managed secrets, never their values). Existing identities keep the own loop.
 */
export class IdentityHarnesses1763958000000 implements MigrationInterface {
  name = 'IdentityHarnesses1763958000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_identities ADD COLUMN harness jsonb, ADD COLUMN harness_auth_secrets jsonb`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_identities DROP COLUMN harness, DROP COLUMN harness_auth_secrets`);
  }
}
