import type { DataSource } from 'typeorm';
import { DatabaseUnreachableError, isDependencyDown } from '../core/dependency-errors';
import { metricsRegistry } from '../core/metrics';
import { createDataSource, databaseStateOf } from '../db/data-source';
import { freeze } from './helpers/freeze';
import { startPrivatePostgres, type PrivatePostgres } from './helpers/private-postgres';
import { waitFor } from './helpers/test-context';

/**
 * The pool under an unresponsive PostgreSQL (db/guarded-pg.ts, db/database-gate.ts), against a
 * PostgreSQL of the file's own, frozen with SIGSTOP as a hung host would be.
 */
let postgres: PrivatePostgres;
const open: DataSource[] = [];

beforeAll(async () => {
  postgres = await startPrivatePostgres();
}, 90_000);
afterAll(async () => {
  await Promise.all(open.map((ds) => ds.destroy().catch(() => undefined)));
  await postgres?.stop();
});

async function dataSource(options: { poolSize: number; queryTimeoutMs: number }): Promise<DataSource> {
  const ds = await createDataSource(postgres.url, options).initialize();
  open.push(ds);
  return ds;
}

const reachable = (ds: DataSource) =>
  waitFor(
    async () => databaseStateOf(ds),
    (s) => s === 'reachable',
    'the gate to find PostgreSQL again',
  );

const refusals = async () =>
  (await metricsRegistry.getSingleMetric('agent_runs_database_refusals_total')!.get()).values[0]?.value ?? 0;

test('a transaction cut by a frozen database is never committed by the next borrower of its connection', async () => {
  const ds = await dataSource({ poolSize: 1, queryTimeoutMs: 1000 });
  await ds.query('CREATE TABLE cut_short (x int)');
  const [{ pid }] = (await ds.query('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
  let thaw = () => undefined as void;
  const failed = await ds
    .transaction(async (tx) => {
      await tx.query('INSERT INTO cut_short VALUES (1)');
      thaw = freeze(postgres.postmasterPid());
      await tx.query('INSERT INTO cut_short VALUES (2)');
    })
    .then(
      () => undefined,
      (err: unknown) => err,
    );
  thaw();
  expect(String(failed)).toMatch(/Query read timeout/);
  expect(isDependencyDown(failed)).toBe(true);

  // Pooled again as TypeORM releases it, the connection would still be inside the cut transaction
  // (its ROLLBACK timed out unsent), and this COMMIT would commit rows 1 and 2 with row 3.
  await reachable(ds);
  const [{ pid: next }] = (await ds.query('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
  expect(next).not.toBe(pid); // the connection that lost the server was closed, not pooled again
  await ds.transaction((tx) => tx.query('INSERT INTO cut_short VALUES (3)'));
  const other = await dataSource({ poolSize: 1, queryTimeoutMs: 5000 });
  expect(await other.query('SELECT x FROM cut_short ORDER BY x')).toEqual([{ x: 3 }]);
});

test('a statement that runs too long is cancelled by the server: its connection stays, nothing is refused', async () => {
  const ds = await dataSource({ poolSize: 1, queryTimeoutMs: 1000 });
  const [{ pid }] = (await ds.query('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
  const slow = await ds.query('SELECT pg_sleep(3)').catch((err: unknown) => err);
  expect(slow).toMatchObject({ code: '57014' }); // statement_timeout, before the client's read timeout
  expect(isDependencyDown(slow)).toBe(true); // an overloaded database: 503, retry later
  expect(databaseStateOf(ds)).toBe('reachable');
  const [{ pid: next }] = (await ds.query('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
  expect(next).toBe(pid);
});

test('a full server is not a down one: a probe told "too many clients" keeps the gate open', async () => {
  const admin = await dataSource({ poolSize: 1, queryTimeoutMs: 5000 });
  await admin.query(`CREATE ROLE one_connection LOGIN PASSWORD 'one' CONNECTION LIMIT 1`);
  await admin.query(`GRANT ALL ON SCHEMA public TO one_connection`);
  const url = new URL(postgres.url);
  url.username = 'one_connection';
  url.password = 'one';
  const ds = await createDataSource(url.toString(), { poolSize: 1, queryTimeoutMs: 5000 }).initialize();
  open.push(ds);
  // The pool's one connection is the role's one: a second query waits 5 s for it, and the
  // probe its failure starts is refused by the server for the same reason.
  let finish!: () => void;
  let holding!: () => void;
  const connectionHeld = new Promise<void>((resolve) => (holding = resolve));
  const held = ds.transaction(async (tx) => {
    await tx.query('SELECT 1');
    holding();
    await new Promise<void>((resolve) => (finish = resolve));
  });
  await connectionHeld;
  const waited = await ds.query('SELECT 2').catch((err: unknown) => err);
  expect(String(waited)).toMatch(/timeout exceeded when trying to connect/);
  expect(databaseStateOf(ds)).toBe('checking');
  await reachable(ds);
  finish();
  await held;
  expect(await ds.query('SELECT 3 AS n')).toEqual([{ n: 3 }]);
});

test('while PostgreSQL is frozen, new work is refused at once and waiting work let go; a probe lets it in again', async () => {
  const ds = await dataSource({ poolSize: 2, queryTimeoutMs: 1000 });
  await ds.query('SELECT 1');
  const refusedBefore = await refusals();
  const thaw = freeze(postgres.postmasterPid());
  try {
    // Two queries hold the pool's two connections; a third waits for one (up to 5 s).
    const held = [ds.query('SELECT 1'), ds.query('SELECT 2')].map((q) => q.catch((err: unknown) => err));
    const waiting = ds.query('SELECT 3').catch((err: unknown) => err);
    expect(String(await held[0])).toMatch(/Query read timeout/);
    // Let go once the probe failed, not when the pool's own 5 s wait ran out.
    expect(await waiting).toBeInstanceOf(DatabaseUnreachableError);
    expect(databaseStateOf(ds)).toBe('unreachable');
    const refused = await ds.query('SELECT 4').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(DatabaseUnreachableError);
    expect(isDependencyDown(refused)).toBe(true);
    expect(await refusals()).toBeGreaterThanOrEqual(refusedBefore + 2);
    const gauge = await metricsRegistry.getSingleMetric('agent_runs_database_reachable')!.get();
    expect(gauge.values[0]?.value).toBe(0);
  } finally {
    thaw();
  }
  await reachable(ds);
  expect(await ds.query('SELECT 5 AS n')).toEqual([{ n: 5 }]);
  // No connection slot was lost on the way: the pool's two can be held at once again.
  await holdAllConnections(ds, 2);
});

/** Holds `count` connections of the pool at the same time (a lost slot makes one wait until its 5 s run out). */
async function holdAllConnections(ds: DataSource, count: number): Promise<void> {
  let arrived = 0;
  let allHere!: () => void;
  const everyone = new Promise<void>((resolve) => (allHere = resolve));
  await Promise.all(
    Array.from({ length: count }, () =>
      ds.transaction(async (tx) => {
        await tx.query('SELECT 1');
        if ((arrived += 1) === count) allHere();
        await everyone;
      }),
    ),
  );
}
