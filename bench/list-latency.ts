/**
 * Benchmark of the run lists at scale: seeds N runs through SQL (one team holds 40 % of them, the
 * rest spread over 50 teams; realistic spread of states, names, models, sources, environments,
 * skills, metadata, creators, schedules, factories, lineage and 90 days of creation times), then
 * asks the API for every list filter and sort (alone, and with `state=SUCCEEDED`) and for one
 * run, 200 requests each, and prints p50/p99 per request.
 * Usage: npm run bench:list -- [rows=1000000] [requests=200]
 */
import { createApp } from '../api/app';
import { encodeCursor, parseListRunsQuery } from '../api/list-runs-query';
import { closeServer, listen } from '../api/server';
import { createLogger } from '../core/logger';
import { createApiKeyService } from '../services/keys/api-key-service';
import { connectTemporalClient } from '../infra/connections';
import { percentile, startBenchStack } from './bench-stack';

const WORDS = [
  'parser',
  'migration',
  'flaky',
  'test',
  'deploy',
  'docs',
  'refactor',
  'cache',
  'auth',
  'billing',
  'search',
  'index',
  'queue',
  'retry',
  'timeout',
  'upgrade',
  'lint',
  'build',
  'release',
  'hotfix',
];

/** Seeds `rows` runs for `teamIds` (the first holds 40 %) in batches, in one SQL statement each. */
async function seed(
  query: (sql: string, params?: unknown[]) => Promise<unknown>,
  rows: number,
  teams: string[],
  creator: string,
) {
  const batch = 100_000;
  for (let from = 1; from <= rows; from += batch) {
    const to = Math.min(rows, from + batch - 1);
    await query(
      `
      WITH g AS (
        SELECT i, hashint4(i) AS h, hashint4(i + 7919) AS h2, hashint4(i + 104729) AS h3 FROM generate_series($1::int, $2::int) i
      ), r AS (
        SELECT i, h, h2, h3, $3::uuid[] AS teams,
          now() - ((abs(h2) % (90 * 86400)) || ' seconds')::interval AS created
        FROM g
      )
      INSERT INTO runs (run_id, team_id, creator_uid, creator_type, creator_display_name, title, prompt, state, turn,
        config, name, model_id, environment_id, skill_spec, source, schedule, metadata, conversation_id, session_id,
        status_message, total_tokens, started_at, ended_at, created_at, updated_at, factory_uid)
      SELECT
        md5('run' || i)::uuid,
        CASE WHEN abs(h) % 100 < 40 THEN teams[1] ELSE teams[2 + abs(h3) % (array_length(teams, 1) - 1)] END,
        CASE WHEN abs(h) % 100 < 40 THEN $4 ELSE 'usr_other' END, 'user', 'bench user',
        initcap(($5::text[])[1 + abs(h) % 20]) || ' ' || ($5::text[])[1 + abs(h2) % 20] || ' #' || i,
        repeat('Please ' || ($5::text[])[1 + abs(h3) % 20] || ' the ' || ($5::text[])[1 + abs(h) % 20] || ' module carefully. ', 1 + abs(h2) % 20),
        (ARRAY['SUCCEEDED','SUCCEEDED','SUCCEEDED','SUCCEEDED','SUCCEEDED','SUCCEEDED','SUCCEEDED','FAILED','ERROR','CANCELLED','INPROGRESS','QUEUED'])[1 + abs(h3) % 12],
        1,
        jsonb_build_object('model_id', 'openai/model-' || abs(h2) % 6, 'idle_timeout_minutes', 10, 'name', 'bot-' || (abs(h) % 5000)),
        'bot-' || (abs(h) % 5000),
        'openai/model-' || abs(h2) % 6,
        CASE WHEN abs(h3) % 3 = 0 THEN NULL ELSE 'env-' || abs(h3) % 40 END,
        CASE WHEN abs(h2) % 10 = 0 THEN 'acme/skills:skill-' || abs(h) % 50 ELSE NULL END,
        (ARRAY['API','API','API','API','SCHEDULED_AGENT','ORCHESTRATION','GITHUB_ACTION','CLI'])[1 + abs(h) % 8],
        CASE WHEN abs(h) % 8 = 4 THEN jsonb_build_object('schedule_id', 'sch-' || abs(h2) % 100, 'schedule_name', 'nightly', 'cron_schedule', '0 3 * * *') ELSE NULL END,
        jsonb_build_object('ticket', 'OPS-' || abs(h3) % 20000, 'team', 'squad-' || abs(h) % 12),
        'conv-' || i,
        'session-' || i,
        CASE WHEN abs(h3) % 12 IN (7, 8) THEN jsonb_build_object('message', 'The model provider rejected the request', 'error_code', 'invalid_request') ELSE NULL END,
        abs(h) % 200000,
        created + interval '2 seconds',
        CASE WHEN abs(h3) % 12 < 10 THEN created + ((abs(h) % 3600) || ' seconds')::interval ELSE NULL END,
        created,
        created + ((abs(h) % 3600) || ' seconds')::interval,
        CASE WHEN abs(h) % 50 = 0 THEN 'fac_' || abs(h2) % 20 ELSE NULL END
      FROM r`,
      [from, to, teams, creator, WORDS],
    );
    process.stdout.write(`  seeded ${to} runs\n`);
  }
}

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 1_000_000);
  const requests = Number(process.argv[3] ?? 200);
  const stack = await startBenchStack({ name: 'list', poolSize: 10 });
  const { config, secretsKeyring, dataSource } = stack;
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const { connection, client } = await connectTemporalClient({
    address: stack.temporalAddress,
    namespace: config.temporal.namespace,
  });
  const app = createApp({
    config,
    dataSource,
    temporalClient: client,
    temporalConnection: connection,
    logger: createLogger('error', 'bench'),
    secretsKeyring,
  });
  const server = await listen(app, 0, '127.0.0.1');
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1`;
  const { rawKey, principalUid } = await createApiKeyService({ config, dataSource }).create({
    kind: 'personal',
    name: 'bench',
    team: 'bench-big',
  });
  const [{ team_id: bigTeam }] = (await dataSource.query(`SELECT team_id FROM principals WHERE uid = $1`, [
    principalUid,
  ])) as [{ team_id: string }];
  const teams = [bigTeam];
  for (let t = 0; t < 50; t++) {
    const [{ id }] = (await dataSource.query(
      `INSERT INTO teams (id, name) VALUES (gen_random_uuid(), $1) RETURNING id`,
      [`bench-team-${t}`],
    )) as [{ id: string }];
    teams.push(id);
  }
  const seedStart = Date.now();
  log(`seeding ${rows} runs ...`);
  await seed((sql, params) => dataSource.query(sql, params), rows, teams, principalUid);
  // Lineage: every 20th run of the big team is a root with the next few below it.
  await dataSource.query(
    `
    INSERT INTO run_lineage (ancestor_run_id, run_id, depth)
    SELECT md5('run' || (i - i % 20))::uuid, md5('run' || i)::uuid, 1 FROM generate_series(21, $1::int) i
    WHERE i % 20 BETWEEN 1 AND 4 ON CONFLICT DO NOTHING`,
    [rows],
  );
  // As autovacuum leaves a table in steady state: statistics, visibility map, GIN pending lists merged.
  await dataSource.query('VACUUM ANALYZE');
  const [{ n: bigRows }] = (await dataSource.query(`SELECT count(*)::int AS n FROM runs WHERE team_id = $1`, [
    bigTeam,
  ])) as [{ n: number }];
  log(`seeded in ${((Date.now() - seedStart) / 1000).toFixed(0)} s; the big team holds ${bigRows} runs`);

  const headers = { Authorization: `Bearer ${rawKey}` };
  const [rare] = (await dataSource.query(
    `SELECT name FROM runs WHERE team_id = $1 GROUP BY name ORDER BY count(*) LIMIT 1`,
    [bigTeam],
  )) as [{ name: string }];
  const [anyRun] = (await dataSource.query(
    `SELECT run_id, updated_at FROM runs WHERE team_id = $1 ORDER BY updated_at DESC, run_id DESC OFFSET $2 LIMIT 1`,
    [bigTeam, Math.max(0, Math.min(100_000, bigRows - 21))],
  )) as [{ run_id: string; updated_at: Date }];
  const [root] = (await dataSource.query(
    `SELECT ancestor_run_id AS id FROM run_lineage l JOIN runs r ON r.run_id = l.ancestor_run_id WHERE r.team_id = $1 LIMIT 1`,
    [bigTeam],
  )) as [{ id: string }];
  const deepCursor = encodeCursor(parseListRunsQuery({}), {
    value: anyRun.updated_at.toISOString(),
    runId: anyRun.run_id,
  });
  const [succeeded] = (await dataSource.query(
    `SELECT run_id, updated_at FROM runs WHERE team_id = $1 AND state = 'SUCCEEDED' ORDER BY updated_at DESC, run_id DESC OFFSET $2 LIMIT 1`,
    [bigTeam, Math.max(0, Math.min(100_000, Math.floor(bigRows / 2)))],
  )) as [{ run_id: string; updated_at: Date }];
  // A cursor is bound to its filters: the deep page with state=SUCCEEDED needs its own.
  const deepStateCursor = encodeCursor(parseListRunsQuery({ state: 'SUCCEEDED' }), {
    value: succeeded.updated_at.toISOString(),
    runId: succeeded.run_id,
  });
  const weekAgo = new Date(Date.now() - 7 * 86400_000).toISOString();
  const filters: [string, string][] = [
    ['default', ''],
    ['page 5,000 pages deep (or the last)', `cursor=${encodeURIComponent(deepCursor)}`],
    ['limit=100', 'limit=100'],
    ['name (rare)', `name=${rare.name}`],
    ['model_id', 'model_id=openai/model-3'],
    ['creator', `creator=${principalUid}`],
    ['source', 'source=SCHEDULED_AGENT'],
    ['environment_id', 'environment_id=env-7'],
    ['environment_id=empty-environment', 'environment_id=empty-environment'],
    ['skill_spec', 'skill_spec=acme/skills:skill-9'],
    ['schedule_id', 'schedule_id=sch-42'],
    ['metadata', 'metadata[ticket]=OPS-1234'],
    ['artifact_type', 'artifact_type=FILE'],
    ['ancestor_run_id', `ancestor_run_id=${root.id}`],
    ['factory_uid', 'factory_uid=fac_3'],
    ['created_after (7 days)', `created_after=${weekAgo}`],
    ['created_before (7 days)', `created_before=${weekAgo}`],
    ['updated_after (7 days)', `updated_after=${weekAgo}`],
    ['q (matches nothing)', 'q=zebra-crossing'],
    ['q (about 1 %)', 'q=%231234'],
    ['q (common word)', 'q=parser'],
    ['sort_by=title', 'sort_by=title'],
    ['sort_by=title asc', 'sort_by=title&sort_order=asc'],
    ['sort_by=created_at', 'sort_by=created_at'],
    ['sort_order=asc', 'sort_order=asc'],
  ];
  const time = async (url: string): Promise<number> => {
    const start = process.hrtime.bigint();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  const measure = async (name: string, url: string) => {
    for (let i = 0; i < 5; i++) await time(url); // warm
    const ms: number[] = [];
    for (let i = 0; i < requests; i++) ms.push(await time(url));
    log(
      `${name.padEnd(52)} p50 ${percentile(ms, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(ms, 99).toFixed(1).padStart(7)} ms`,
    );
    return percentile(ms, 99);
  };
  log(`\n${requests} requests each through the API, the big team (${bigRows} of ${rows} runs):`);
  const slow: string[] = [];
  for (const [name, query] of filters) {
    for (const withState of [false, true]) {
      const own = withState && query.startsWith('cursor=') ? `cursor=${encodeURIComponent(deepStateCursor)}` : query;
      const q = [own, withState ? 'state=SUCCEEDED' : ''].filter(Boolean).join('&');
      const p99 = await measure(`${name}${withState ? ' + state=SUCCEEDED' : ''}`, `${base}/agent/runs?${q}`);
      if (p99 > 10) slow.push(name);
    }
  }
  const oneP99 = await measure('GET /agent/runs/{id}', `${base}/agent/runs/${anyRun.run_id}`);
  log(
    slow.length || oneP99 > 5
      ? `\nover target: ${[...new Set(slow)].join(', ')}${oneP99 > 5 ? ' GET one run' : ''}`
      : '\nevery request within target (list p99 ≤ 10 ms, one run p99 ≤ 5 ms)',
  );

  await closeServer(server);
  await connection.close();
  await stack.stop();
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
