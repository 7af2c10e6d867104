import type { EntityManager } from 'typeorm';

/**
 * Ended runs in bulk, in the shape the service leaves them, for benchmarks (bench/retention-impact.ts);
 * the service never calls this. Each run has a transcript of 15 entries (its states, prompt,
 * config, three steps of an assistant message, a started and a finished tool call with a few
 * hundred bytes of output each, and a final answer), three checkpoints in a chain (4 objects each),
 * a file artifact and a CLI log (blobs in the object store), and one run in ten a follow-up. One
 * run in twenty is a root with the next four as its children (lineage, parent_run_id).
 */
export interface EndedRunsSeed {
  /** Runs numbered from `from` to `to` (their ids derive from `label` and the number). */
  label: string;
  from: number;
  to: number;
  /** The first team holds 40 % of the runs, the others the rest. */
  teamIds: string[];
  creatorUid: string;
  /** Each run ended between these many days ago. */
  endedDaysAgo: [number, number];
}

/** The id of run number `i` of the seed's label ($3). */
const RUN_ID = `md5($3 || i)::uuid`;
/** The seed's runs, in a statement about rows of theirs. */
const SEEDED = `r.run_id IN (SELECT ${RUN_ID} FROM generate_series($1::int, $2::int) i)`;

/** Inserts one batch of runs and everything they left, in one transaction (triggers off: no notifications, no deliveries; transcript ids drawn here, in order). */
export async function seedEndedRuns(manager: EntityManager, seed: EndedRunsSeed): Promise<void> {
  await manager.transaction(async (tx) => {
    await tx.query(`SET LOCAL session_replication_role = replica`);
    const range = [seed.from, seed.to, seed.label];
    await tx.query(RUNS_SQL, [...range, seed.teamIds, seed.creatorUid, ...seed.endedDaysAgo]);
    for (const sql of [EVENTS_SQL, CHECKPOINTS_SQL, OBJECTS_SQL, BLOBS_SQL, ARTIFACTS_SQL, FOLLOWUPS_SQL, LINEAGE_SQL])
      await tx.query(sql, range);
  });
}

const RUNS_SQL = `
  WITH r AS (
    SELECT i, abs(hashint4(i)) AS h, abs(hashint4(i + 7919)) AS h2,
      now() - make_interval(secs => $6 * 86400 + abs(hashint4(i + 104729)) % (($7 - $6) * 86400)) AS ended
    FROM generate_series($1::int, $2::int) i
  )
  INSERT INTO runs (run_id, team_id, creator_uid, creator_type, creator_display_name, title, prompt, state, turn,
    config, name, model_id, source, metadata, conversation_id, session_id, total_tokens, started_at, ended_at,
    created_at, updated_at, parent_run_id, root_run_id)
  SELECT ${RUN_ID},
    CASE WHEN h % 100 < 40 THEN ($4::uuid[])[1] ELSE ($4::uuid[])[2 + h2 % (array_length($4::uuid[], 1) - 1)] END,
    $5, 'user', 'bench user',
    'Fix the flaky test #' || i,
    repeat('Please fix the flaky parser test and keep the public API as it is. ', 1 + h % 8),
    (ARRAY['SUCCEEDED','SUCCEEDED','SUCCEEDED','SUCCEEDED','SUCCEEDED','FAILED','ERROR','CANCELLED'])[1 + h2 % 8],
    1,
    jsonb_build_object('model_id', 'openai/model-' || h % 6, 'idle_timeout_minutes', 10),
    'bot-' || h % 500,
    'openai/model-' || h % 6,
    'API',
    jsonb_build_object('ticket', 'OPS-' || h2 % 20000),
    'conv-' || ${RUN_ID},
    'session-' || ${RUN_ID},
    h % 200000,
    ended - make_interval(secs => 60 + h % 1800),
    ended,
    ended - make_interval(secs => 65 + h % 1800),
    ended,
    CASE WHEN i % 20 BETWEEN 1 AND 4 AND i - i % 20 >= $1 THEN md5($3 || (i - i % 20))::uuid END,
    NULL
  FROM r`;

const EVENTS_SQL = `
  INSERT INTO run_events (id, run_id, event_key, kind, turn, payload, created_at)
  SELECT nextval('run_events_id_seq'), r.run_id, 'e' || e, k.kind, 1,
    CASE k.kind
      WHEN 'state' THEN jsonb_build_object('state', CASE e WHEN 1 THEN 'QUEUED' WHEN 3 THEN 'INPROGRESS' ELSE r.state END)
      WHEN 'prompt' THEN jsonb_build_object('text', r.prompt)
      WHEN 'config' THEN jsonb_build_object('model_id', r.model_id, 'harness', 'oz')
      WHEN 'assistant' THEN jsonb_build_object('text', 'Let me look at the failing test first.',
        'tool_calls', jsonb_build_array(jsonb_build_object('id', 'call_' || e, 'name', 'run_command',
          'arguments', jsonb_build_object('command', 'npm test -- parser'))))
      WHEN 'tool_call_started' THEN jsonb_build_object('id', 'call_' || (e - 1), 'name', 'run_command')
      ELSE jsonb_build_object('id', 'call_' || (e - 2), 'name', 'run_command', 'exit_code', 0,
        'output', repeat('PASS test/parser.test.ts (12 ms) ', 5 + abs(hashint4(e)) % 20))
    END,
    r.created_at + make_interval(secs => e * 3)
  FROM runs r
  CROSS JOIN (VALUES
    (1, 'state'), (2, 'prompt'), (3, 'state'), (4, 'config'),
    (5, 'assistant'), (6, 'tool_call_started'), (7, 'tool_call'),
    (8, 'assistant'), (9, 'tool_call_started'), (10, 'tool_call'),
    (11, 'assistant'), (12, 'tool_call_started'), (13, 'tool_call'),
    (14, 'assistant'), (15, 'state')) AS k(e, kind)
  WHERE ${SEEDED}
  ORDER BY r.run_id, e`;

const CHECKPOINTS_SQL = `
  INSERT INTO checkpoints (checkpoint_id, run_id, team_id, turn, step, parent_id, manifest_key, full_manifest,
    chain_length, files, bytes, bytes_added, events_through, created_at)
  SELECT md5(r.run_id::text || 'cp' || s)::uuid, r.run_id, r.team_id, 1, s,
    CASE WHEN s > 1 THEN md5(r.run_id::text || 'cp' || (s - 1))::uuid END,
    'sha256/' || md5(r.run_id::text || 'manifest' || s), s = 1, s, 1200, 48000000,
    CASE WHEN s = 1 THEN 6000000 ELSE 40000 END, 0, r.created_at + make_interval(secs => s * 20)
  FROM runs r CROSS JOIN generate_series(1, 3) s
  WHERE ${SEEDED}`;

const OBJECTS_SQL = `
  INSERT INTO checkpoint_objects (checkpoint_id, object_key, size_bytes)
  SELECT c.checkpoint_id, 'sha256/' || md5(c.checkpoint_id::text || o), 10000 * o
  FROM checkpoints c CROSS JOIN generate_series(1, 4) o
  WHERE c.run_id IN (SELECT r.run_id FROM runs r WHERE ${SEEDED})`;

const BLOBS_SQL = `
  INSERT INTO blobs (blob_id, run_id, size_bytes, sha256, content, object_key, created_at)
  SELECT md5(r.run_id::text || 'blob' || b)::uuid, r.run_id, 20000 * b, md5(r.run_id::text || b),
    NULL, 'sha256/' || md5(r.run_id::text || 'object' || b), r.ended_at
  FROM runs r CROSS JOIN generate_series(1, 2) b
  WHERE ${SEEDED}`;

const ARTIFACTS_SQL = `
  INSERT INTO artifacts (artifact_uid, run_id, team_id, tool_call_key, artifact_type, filepath, filename, mime_type,
    size_bytes, blob_id, created_at)
  SELECT md5(r.run_id::text || 'artifact')::uuid, r.run_id, r.team_id, 'call_13', 'FILE', 'report.md', 'report.md',
    'text/markdown', 20000, md5(r.run_id::text || 'blob' || 1)::uuid, r.ended_at
  FROM runs r
  WHERE ${SEEDED}`;

const FOLLOWUPS_SQL = `
  INSERT INTO followups (id, run_id, seq, message, mode, creator_uid, created_at, delivered_at)
  SELECT md5(${RUN_ID}::text || 'followup')::uuid, ${RUN_ID}, 1, 'Also update the changelog.', 'queue', 'bench',
    now(), now()
  FROM generate_series($1::int, $2::int) i WHERE i % 10 = 0`;

const LINEAGE_SQL = `
  INSERT INTO run_lineage (ancestor_run_id, run_id, depth)
  SELECT r.parent_run_id, r.run_id, 1 FROM runs r
  WHERE r.parent_run_id IS NOT NULL AND ${SEEDED}`;

/**
 * The team of that name (its first user as the runs' creator) and `others` new teams: the teams
 * a seed spreads its runs over, that one first.
 */
export async function insertBenchTeams(
  manager: EntityManager,
  teamName: string,
  others: number,
): Promise<{ teamIds: string[]; creatorUid: string }> {
  const [first] = (await manager.query(
    `SELECT t.id, p.uid FROM teams t JOIN principals p ON p.team_id = t.id WHERE t.name = $1 ORDER BY p.created_at LIMIT 1`,
    [teamName],
  )) as { id: string; uid: string }[];
  if (!first) throw new Error(`No team ${teamName} with a user.`);
  const rows = (await manager.query(
    `INSERT INTO teams (id, name) SELECT gen_random_uuid(), $1 || '-' || n FROM generate_series(1, $2::int) n RETURNING id`,
    [teamName, others],
  )) as { id: string }[];
  return { teamIds: [first.id, ...rows.map((r) => r.id)], creatorUid: first.uid };
}

/** Runs that ended more than `days` days ago (retention's to delete) and the other ended ones. */
export async function countRunsEndedSince(
  manager: EntityManager,
  days: number,
): Promise<{ expired: number; kept: number }> {
  const [row] = (await manager.query(
    `SELECT count(*) FILTER (WHERE ended_at < now() - make_interval(days => $1))::int AS expired,
            count(*) FILTER (WHERE ended_at >= now() - make_interval(days => $1))::int AS kept
       FROM runs WHERE ended_at IS NOT NULL`,
    [days],
  )) as { expired: number; kept: number }[];
  return row!;
}
