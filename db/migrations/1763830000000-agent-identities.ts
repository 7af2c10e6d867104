import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Named agents of a team. An identity is a service-account principal (its uid is the
 * principal's), so its keys and the runs it creates or executes name it like any principal.
 * A run records the identity it executed as.
 */
export class AgentIdentities1763830000000 implements MigrationInterface {
  name = 'AgentIdentities1763830000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agent_identities (
        uid text PRIMARY KEY REFERENCES principals(uid),
        team_id uuid NOT NULL REFERENCES teams(id),
        name text NOT NULL,
        description text,
        prompt text,
        agent_type text NOT NULL DEFAULT 'CUSTOM',
        factory_uid text,
        environment_id text,
        base_model text,
        mcp_servers jsonb,
        skills jsonb NOT NULL DEFAULT '[]'::jsonb,
        worker_host text,
        on_behalf_of_enabled boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        UNIQUE (team_id, name)
      )`);
    await q.query(`CREATE INDEX agent_identities_factory ON agent_identities (team_id, factory_uid)`);
    await q.query(`ALTER TABLE runs ADD COLUMN executor_uid text, ADD COLUMN executor_display_name text`);
    // Agent principals made by `npm run keys` before identities existed become identities.
    await q.query(`
      INSERT INTO agent_identities (uid, team_id, name)
      SELECT uid, team_id, display_name FROM principals WHERE type = 'service_account'
      ON CONFLICT DO NOTHING`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN executor_uid, DROP COLUMN executor_display_name`);
    await q.query(`DROP TABLE agent_identities`);
  }
}
