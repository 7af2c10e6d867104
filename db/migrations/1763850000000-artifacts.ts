import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Files of a run: artifacts the agent uploaded, attachments the request brought, and the handoff
 * patch of each ended turn. Their bytes live in `blobs` (see db/blob-store.ts for why PostgreSQL);
 * every blob belongs to one run and goes with it.
 */
export class Artifacts1763850000000 implements MigrationInterface {
  name = 'Artifacts1763850000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE blobs (
        blob_id uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        size_bytes bigint NOT NULL,
        sha256 text NOT NULL,
        content bytea NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX blobs_run ON blobs (run_id)`);
    // One artifact per tool call: a retried step that uploads again finds the first one.
    await q.query(`
      CREATE TABLE artifacts (
        artifact_uid uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        team_id uuid NOT NULL,
        tool_call_key text NOT NULL,
        artifact_type text NOT NULL,
        filepath text NOT NULL,
        filename text NOT NULL,
        mime_type text NOT NULL,
        description text,
        title text,
        size_bytes bigint NOT NULL,
        blob_id uuid NOT NULL REFERENCES blobs(blob_id) ON DELETE CASCADE,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        UNIQUE (run_id, tool_call_key)
      )`);
    await q.query(`CREATE INDEX artifacts_run_type ON artifacts (run_id, artifact_type)`);
    await q.query(`
      CREATE TABLE run_attachments (
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        position integer NOT NULL,
        file_name text NOT NULL,
        mime_type text NOT NULL,
        size_bytes bigint NOT NULL,
        blob_id uuid NOT NULL REFERENCES blobs(blob_id) ON DELETE CASCADE,
        PRIMARY KEY (run_id, position)
      )`);
    await q.query(`
      CREATE TABLE handoff_attachments (
        attachment_id uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        turn integer NOT NULL,
        filename text NOT NULL,
        mime_type text NOT NULL,
        size_bytes bigint NOT NULL,
        blob_id uuid NOT NULL REFERENCES blobs(blob_id) ON DELETE CASCADE,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        UNIQUE (run_id, turn, filename)
      )`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const table of ['handoff_attachments', 'run_attachments', 'artifacts', 'blobs']) {
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
