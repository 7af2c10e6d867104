import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A SKILL.md a run found that could not be parsed is recorded too, with why (`error`): `GET
 * /agent?include_malformed_skills=true` lists it, so that its author can see what to fix.
 */
export class MalformedSkills1763969400000 implements MigrationInterface {
  name = 'MalformedSkills1763969400000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE environment_skills ADD COLUMN error text`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM environment_skills WHERE error IS NOT NULL`);
    await q.query(`ALTER TABLE environment_skills DROP COLUMN error`);
  }
}
