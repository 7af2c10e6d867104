import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every transcript entry announces itself on the channel `run_events` as `<run_id>:<id>`, from a
 * trigger, so that every writer (API, activities, reconciler) is covered. PostgreSQL delivers
 * the notification at commit, when the row is visible: a listener that then reads the run's
 * entries after the last id it sent finds it. The API's event streams listen there.
 */
export class RunEventsNotify1763870000000 implements MigrationInterface {
  name = 'RunEventsNotify1763870000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('run_events', NEW.run_id::text || ':' || NEW.id::text);
        RETURN NULL;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
        FOR EACH ROW EXECUTE FUNCTION notify_run_event()`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER run_events_notify ON run_events`);
    await q.query(`DROP FUNCTION notify_run_event()`);
  }
}
