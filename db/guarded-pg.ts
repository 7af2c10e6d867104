import pg from 'pg';
import { DatabaseUnreachableError, isDependencyDown, isStatementTimeout } from '../core/dependency-errors';
import { databaseRefusals } from '../core/metrics';
import type { DatabaseGate } from './database-gate';

type Submittable = { submit?: unknown } | undefined;
type Release = (err?: Error | boolean) => void;
type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, release: Release) => void;

const NOTHING_TO_RELEASE: Release = () => undefined;

/** Worded so that isDependencyDown knows it (core/dependency-errors.ts). */
const lostError = () => new Error('Connection terminated: an earlier query on this connection got no answer');

/**
 * `pg` as TypeORM loads it (its `driver` option), with a pool that
 * - destroys a connection on which a query failed for want of the server, instead of pooling it
 *   again: such a connection may hold a transaction the server never saw rolled back, which the
 *   next borrower's COMMIT would commit (TypeORM releases it like any other after a read timeout);
 * - refuses new work at once while `gate` says PostgreSQL is unreachable, and lets go of work
 *   waiting for a connection when it turns so.
 */
export function guardedPg(gate: DatabaseGate): typeof pg {
  const watched = new WeakSet<pg.PoolClient>();
  const lostTheServer = new WeakSet<pg.PoolClient>();

  const watch = (client: pg.PoolClient) => {
    if (watched.has(client)) return;
    watched.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      // A ROLLBACK after a read timeout would only queue behind the statement that got no answer.
      const promised = typeof args.at(-1) !== 'function' && typeof (args[0] as Submittable)?.submit !== 'function';
      if (promised && lostTheServer.has(client)) return Promise.reject(lostError());
      const result = query(...args);
      if (result instanceof Promise) {
        result.catch((err: unknown) => {
          // The server answered a statement timeout: the connection is good and the server up.
          if (!isDependencyDown(err) || isStatementTimeout(err)) return;
          lostTheServer.add(client);
          gate.noteFailure(err);
        });
      }
      return result;
    };
  };

  const releaseOf =
    (client: pg.PoolClient, release: Release): Release =>
    (err) =>
      release(err || (lostTheServer.has(client) ? lostError() : undefined));

  class GuardedPool extends pg.Pool {
    override connect(): Promise<pg.PoolClient>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
      if (!callback) {
        return new Promise((resolve, reject) => {
          this.connect((err, client) => (err ? reject(err) : resolve(client!)));
        });
      }
      if (gate.state === 'unreachable') {
        databaseRefusals.inc();
        process.nextTick(() => callback(new DatabaseUnreachableError(), undefined, NOTHING_TO_RELEASE));
        return;
      }
      let answered = false;
      const stopListening = gate.onUnreachable(() => {
        if (answered) return;
        answered = true;
        databaseRefusals.inc();
        callback(new DatabaseUnreachableError(), undefined, NOTHING_TO_RELEASE);
      });
      super.connect((err, client, release) => {
        stopListening();
        if (answered) {
          // Let go meanwhile: the connection goes back (or, if it lost the server, away).
          if (client) releaseOf(client, release)();
          return;
        }
        answered = true;
        if (err || !client) {
          if (err) gate.noteFailure(err);
          callback(err, undefined, release);
          return;
        }
        watch(client);
        client.release = releaseOf(client, release);
        callback(undefined, client, client.release);
      });
    }
  }

  return Object.create(pg, { Pool: { value: GuardedPool } }) as typeof pg;
}
