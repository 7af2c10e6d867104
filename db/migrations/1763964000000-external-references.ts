import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a run reported it made elsewhere (a pull request, a ticket, a document): its canonical URL
 * (core/external-references.ts), a free-form type and a title; once per run and URL. Looked up
 * by team and URL (`GET /agent/run-by-external-reference`).
 */
export class ExternalReferences1763964000000 implements MigrationInterface {
  name = 'ExternalReferences1763964000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE run_external_references (
        run_id uuid NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team_id uuid NOT NULL REFERENCES teams (id),
        url text NOT NULL,
        reference_type text NOT NULL,
        title text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (run_id, url)
      )`);
    await q.query(`CREATE INDEX run_external_references_lookup ON run_external_references (team_id, url, created_at)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_external_references`);
  }
}
