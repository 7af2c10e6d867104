import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * API keys' lifecycle (`npm run keys -- create --expires-in`, `rotate`, `list`).
 * `expires_at`: from then on the key is refused (null: never); a rotation's grace period is the
 * old key's `expires_at` brought forward. `last_used_at`: when an API last authenticated the key,
 * to within about a minute (written in batches, at most once a minute per key). `replaced_by`:
 * the key a rotation made to take this one's place.
 *
 * Only nullable columns: the build before reads and writes keys as it did. It does not know
 * `expires_at`, so an API of that build still accepts an expired key until it is replaced.
 */
export class KeyLifecycle1763976300000 implements MigrationInterface {
  name = 'KeyLifecycle1763976300000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN expires_at timestamptz(3)`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz(3)`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN replaced_by uuid REFERENCES api_keys(id)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN replaced_by`);
    await q.query(`ALTER TABLE api_keys DROP COLUMN last_used_at`);
    await q.query(`ALTER TABLE api_keys DROP COLUMN expires_at`);
  }
}
