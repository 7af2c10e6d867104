import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A role on every API key: `member` (runs, environments, schedules, identities without their
 * permissions) or `admin` (also identities' permissions and deletion, webhooks, and later what
 * only an admin should change). Keys made before roles existed become members: no key gains a
 * power it was not meant to have; an operator names the admins (`npm run keys -- set-role`).
 */
export class KeyRoles1763930000000 implements MigrationInterface {
  name = 'KeyRoles1763930000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE api_keys ADD COLUMN role text NOT NULL DEFAULT 'member' CHECK (role IN ('member', 'admin'))`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN role`);
  }
}
