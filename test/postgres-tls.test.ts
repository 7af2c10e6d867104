import { startPrivatePostgres, type PrivatePostgres } from './helpers/private-postgres';
import { createRun, waitForState } from './helpers/runs';
import { makeTestCertificates, type TestCertificates } from './helpers/test-certificates';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { spawnWorker } from './helpers/worker-processes';

/**
 * PostgreSQL over TLS as the operations guide says to configure it: `DATABASE_URL` with
 * `sslmode=verify-full&sslrootcert=<CA>`, against a server whose `agent_runs` database takes TLS
 * connections only (pg_hba `hostssl`). The service migrates, runs a run and serves it through
 * that; a wrong CA or a URL without TLS stops a process at start, saying what to change.
 */
jest.setTimeout(240_000);

let certs: TestCertificates;
let postgres: PrivatePostgres;
let ctx: TestContext;
let tlsUrl: string;

beforeAll(async () => {
  certs = makeTestCertificates();
  postgres = await startPrivatePostgres({ tls: { cert: certs.loopbackCert, key: certs.loopbackKey } });
  tlsUrl = `${postgres.url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(certs.caCert)}`;
  ctx = await createTestContext({ databaseUrl: tlsUrl });
});
afterAll(async () => {
  await ctx?.close();
  await postgres?.stop();
});

test('sslmode=verify-full with the CA: migrations, a run and its reads go over TLS', async () => {
  const [{ ssl }] = (await ctx.dataSource.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')) as [
    { ssl: boolean },
  ];
  expect(ssl).toBe(true);
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('pg-tls');
  ctx.model.script(marker, () => ({ text: 'done over TLS' }));
  const run_id = await createRun(ctx, key, { prompt: `Say done ${marker}`, config: { idle_timeout_minutes: 0 } });
  await waitForState(ctx, key, run_id, ['SUCCEEDED'], undefined, 120_000);
  // Nobody reached the database in plaintext: the server takes no such connection to it.
  const plain = (await ctx.dataSource.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
      WHERE a.datname = 'agent_runs' AND a.backend_type = 'client backend' AND NOT s.ssl`,
  )) as [{ n: number }];
  expect(plain[0].n).toBe(0);
});

test('a stranger CA, or no TLS at all: the worker stops at start saying what to fix, never the password', async () => {
  const password = decodeURIComponent(new URL(postgres.url).password);
  const stranger = `${postgres.url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(certs.strangerCert.replace('stranger.crt', 'stranger-ca.crt'))}`;
  const results = await Promise.all(
    [stranger, postgres.url].map(async (url) => {
      const worker = spawnWorker(ctx, { env: { DATABASE_URL: url } });
      const { code } = await worker.exited;
      return { code, output: worker.output.join('') };
    }),
  );
  for (const r of results) {
    expect(r.code).toBe(1);
    expect(r.output).toContain(`Cannot connect to PostgreSQL at 127.0.0.1:${new URL(postgres.url).port}/agent_runs`);
    expect(r.output).not.toContain(password);
  }
  expect(results[0]!.output).toContain('(sslmode=verify-full)');
  expect(results[0]!.output).toContain('The TLS handshake failed: sslrootcert in DATABASE_URL must be the CA');
  expect(results[1]!.output).toContain('(sslmode=unset)');
  expect(results[1]!.output).toContain('The server wants TLS: add ?sslmode=verify-full&sslrootcert=');
});
