import type { MigrationInterface, QueryRunner } from 'typeorm';

export class InitialSchema1763780000000 implements MigrationInterface {
  name = 'InitialSchema1763780000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE teams (
        id uuid PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE principals (
        uid text PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id),
        type text NOT NULL CHECK (type IN ('user', 'service_account')),
        display_name text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        UNIQUE (team_id, type, display_name)
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        principal_uid text NOT NULL REFERENCES principals(uid),
        team_id uuid NOT NULL REFERENCES teams(id),
        kind text NOT NULL CHECK (kind IN ('personal', 'agent')),
        name text NOT NULL,
        prefix text NOT NULL,
        secret_hash text NOT NULL UNIQUE,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        revoked_at timestamptz(3)
      )`);
    await q.query(`
      CREATE TABLE runs (
        run_id uuid PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id),
        creator_uid text NOT NULL,
        creator_type text NOT NULL,
        creator_display_name text NOT NULL,
        title text NOT NULL,
        prompt text NOT NULL,
        state text NOT NULL,
        turn integer NOT NULL DEFAULT 1,
        config jsonb NOT NULL,
        name text,
        model_id text NOT NULL,
        environment_id text,
        skill_spec text,
        source text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        conversation_id text NOT NULL,
        parent_run_id uuid,
        session_id text NOT NULL UNIQUE,
        status_message jsonb,
        agent_skill jsonb,
        total_tokens bigint NOT NULL DEFAULT 0,
        inference_cost_usd numeric,
        cancel_requested_at timestamptz(3),
        cancel_requested_by text,
        started_at timestamptz(3),
        ended_at timestamptz(3),
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX runs_team_updated ON runs (team_id, updated_at DESC, run_id DESC)`);
    await q.query(`CREATE INDEX runs_team_created ON runs (team_id, created_at DESC, run_id DESC)`);
    await q.query(`CREATE INDEX runs_team_title ON runs (team_id, (title COLLATE "C"), run_id)`);
    await q.query(`CREATE INDEX runs_team_state ON runs (team_id, state)`);
    await q.query(`CREATE INDEX runs_metadata ON runs USING gin (metadata jsonb_path_ops)`);
    await q.query(`CREATE INDEX runs_conversation ON runs (conversation_id)`);
    await q.query(`
      CREATE TABLE followups (
        id uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id),
        seq integer NOT NULL,
        message text NOT NULL,
        mode text NOT NULL,
        creator_uid text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        delivered_at timestamptz(3),
        UNIQUE (run_id, seq)
      )`);
    await q.query(`
      CREATE TABLE run_events (
        id bigserial PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id),
        event_key text NOT NULL,
        kind text NOT NULL,
        turn integer NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        UNIQUE (run_id, event_key)
      )`);
    await q.query(`
      CREATE TABLE idempotency_records (
        principal_uid text NOT NULL,
        scope text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        response_status integer,
        response_body jsonb,
        response_headers jsonb,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (principal_uid, scope, key)
      )`);
    await q.query(`CREATE INDEX idempotency_records_created ON idempotency_records (created_at)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const table of ['idempotency_records', 'run_events', 'followups', 'runs', 'api_keys', 'principals', 'teams']) {
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
