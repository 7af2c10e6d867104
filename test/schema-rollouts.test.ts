import { execFile } from 'node:child_process';
import path from 'node:path';
import { Client } from 'pg';
import { startPrivatePostgres, type PrivatePostgres } from './helpers/private-postgres';
import { createTestContext, type TestContext } from './helpers/test-context';
import { killWorker, spawnWorker, waitUntilPolling } from './helpers/worker-processes';

/**
 * The rollout rules of the operations guide ("Rollouts"): only `npm run migrate` (and `npm start`)
 * changes the schema; an API, a worker or the keys command started on a schema behind its build
 * stops and says to migrate; one started on a schema a newer build migrated runs, and says so.
 */
const ROOT = path.resolve(__dirname, '..');
jest.setTimeout(240_000);

let ctx: TestContext;
let postgres: PrivatePostgres;
beforeAll(async () => {
  ctx = await createTestContext({ worker: false });
  postgres = await startPrivatePostgres();
});
afterAll(async () => {
  await postgres?.stop();
  await ctx?.close();
});

function tool(script: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: postgres.url }, timeout: 120_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? -1) : 0, output: stdout + stderr }),
    );
  });
}

async function migrationsTable(): Promise<string[] | null> {
  const client = new Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const exists = await client.query(`SELECT to_regclass('migrations') IS NOT NULL AS t`);
    if (!(exists.rows[0] as { t: boolean }).t) return null;
    return (await client.query('SELECT name FROM migrations ORDER BY id')).rows.map((r: { name: string }) => r.name);
  } finally {
    await client.end();
  }
}

test('behind: keys and a worker refuse and change nothing; migrate applies; ahead: a worker runs and warns', async () => {
  const keys = await tool('bin/keys.ts', ['list']);
  expect(keys.code).toBe(1);
  expect(keys.output).toMatch(
    /The keys command needs \d+ migrations the database lacks \(InitialSchema1763780000000, /,
  );
  expect(keys.output).toContain('run `npm run migrate`');
  expect(await migrationsTable()).toBeNull();

  const behind = spawnWorker(ctx, { env: { DATABASE_URL: postgres.url } });
  expect((await behind.exited).code).toBe(1);
  expect(behind.output.join('')).toContain('This worker needs');
  expect(await migrationsTable()).toBeNull();

  const migrated = await tool('bin/migrate.ts', []);
  expect(migrated.code).toBe(0);
  const applied = await migrationsTable();
  expect(applied).toContain('InitialSchema1763780000000');
  expect(await tool('bin/keys.ts', ['list'])).toMatchObject({ code: 0, output: 'No keys.\n' });

  // A newer build's migration (a rollback, or old workers during a rolling upgrade): runs, and says so.
  const client = new Client({ connectionString: postgres.url });
  await client.connect();
  await client.query(
    `INSERT INTO migrations ("timestamp", name) VALUES (1799999999999, 'FromANewerBuild1799999999999')`,
  );
  await client.end();
  const ahead = spawnWorker(ctx, { env: { DATABASE_URL: postgres.url } });
  try {
    await waitUntilPolling(ctx, ahead, 'a worker on a newer schema');
    expect(ahead.output.join('')).toContain('the database schema is newer than this build');
    expect(ahead.output.join('')).toContain('FromANewerBuild1799999999999');
  } finally {
    await killWorker(ahead);
  }
});
