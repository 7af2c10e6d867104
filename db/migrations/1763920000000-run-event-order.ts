import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run's transcript entries commit in id order, so that an event stream that resumes after the
 * highest id it has read never skips one committed later with a lower id (a worker's notice
 * racing a step's writes, a follow-up recorded by the API while a step writes).
 *
 * A trigger takes the run's row lock (FOR NO KEY UPDATE, held until commit) and only then draws
 * the id: two transactions writing entries of one run take turns, the second drawing its ids
 * after the first has committed. The column's default is dropped: it would draw an id before
 * the lock (defaults are evaluated before BEFORE triggers).
 *
 * The row lock rather than an advisory lock of its own: writers already take the row (an
 * UPDATE of the run) either before their entry (a state change) or after it (a model call's
 * token usage), and a second lock taken in the other order by each would deadlock them. With the
 * row as the lock, every writer of a run takes the same lock first. A run being created in the
 * same statement (db/run-creation.ts) is not visible to the trigger yet and needs no lock: no
 * other transaction can write its entries before it commits.
 */
export class RunEventOrder1763920000000 implements MigrationInterface {
  name = 'RunEventOrder1763920000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION assign_run_event_id() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM 1 FROM runs WHERE run_id = NEW.run_id FOR NO KEY UPDATE;
        NEW.id := nextval('run_events_id_seq');
        RETURN NEW;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER run_events_assign_id BEFORE INSERT ON run_events
        FOR EACH ROW EXECUTE FUNCTION assign_run_event_id()`);
    await q.query(`ALTER TABLE run_events ALTER COLUMN id DROP DEFAULT`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_events ALTER COLUMN id SET DEFAULT nextval('run_events_id_seq')`);
    await q.query(`DROP TRIGGER run_events_assign_id ON run_events`);
    await q.query(`DROP FUNCTION assign_run_event_id()`);
  }
}
