import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Environments1763790000000 implements MigrationInterface {
  name = 'Environments1763790000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE environments (
        uid text PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id),
        config jsonb NOT NULL,
        name text NOT NULL,
        setup_failed boolean NOT NULL DEFAULT false,
        creator_uid text NOT NULL,
        creator_type text NOT NULL,
        creator_display_name text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        last_updated timestamptz(3) NOT NULL DEFAULT now(),
        deleted_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX environments_team ON environments (team_id, last_updated DESC)`);
    // Skills the agent of a run was offered (bundled and found in its repositories).
    await q.query(`ALTER TABLE runs ADD COLUMN advertised_skills jsonb`);
    await q.query(`
      CREATE TABLE environment_skills (
        environment_uid text NOT NULL REFERENCES environments(uid),
        owner text NOT NULL,
        repo text NOT NULL,
        skill_path text NOT NULL,
        name text NOT NULL,
        description text NOT NULL,
        base_prompt text NOT NULL,
        discovered_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (environment_uid, owner, repo, skill_path)
      )`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE environment_skills`);
    await q.query(`ALTER TABLE runs DROP COLUMN advertised_skills`);
    await q.query(`DROP TABLE environments`);
  }
}
