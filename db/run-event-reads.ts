import type { EntityManager } from 'typeorm';
import type { RunEventKind } from '../core/run-events';
import type { RunState } from '../core/run-state';

/** The channel on which a trigger announces each new transcript entry, as `<run_id>:<id>` (at commit). */
export const RUN_EVENTS_CHANNEL = 'run_events';

export interface StoredRunEvent {
  id: string;
  eventKey: string;
  kind: RunEventKind;
  turn: number;
  payload: Record<string, unknown>;
  createdAt: Date;
}

interface RunEventRow {
  id: string;
  event_key: string;
  kind: RunEventKind;
  turn: number;
  payload: Record<string, unknown>;
  created_at: Date;
}

function toStoredRunEvent(r: RunEventRow): StoredRunEvent {
  return {
    id: r.id,
    eventKey: r.event_key,
    kind: r.kind,
    turn: r.turn,
    payload: r.payload,
    createdAt: r.created_at,
  };
}

/**
 * A run's transcript entries in order, optionally only some kinds and only those after event id
 * `afterId`; `withoutFullOutput` leaves out what only the transcript keeps (a command's whole
 * output), for a step that rebuilds the model's conversation.
 */
export async function loadRunEvents(
  manager: EntityManager,
  runId: string,
  options: { kinds?: readonly RunEventKind[]; afterId?: string; withoutFullOutput?: boolean } = {},
): Promise<StoredRunEvent[]> {
  const range = runEventsRange('after');
  const rows = (await manager.query(
    `SELECT id, event_key, kind, turn, ${payloadColumn(options)} AS payload, created_at FROM run_events
      WHERE ${range.where} AND ($3::text[] IS NULL OR kind = ANY($3::text[]))
      ORDER BY ${range.orderBy}`,
    [runId, options.afterId ?? '0', options.kinds ?? null],
  )) as RunEventRow[];
  return rows.map(toStoredRunEvent);
}

/** A run's transcript entry with key `eventKey`, if it has one. */
export async function loadRunEventByKey(
  manager: EntityManager,
  runId: string,
  eventKey: string,
  options: { withoutFullOutput?: boolean } = {},
): Promise<StoredRunEvent | undefined> {
  const [row] = (await manager.query(
    `SELECT id, event_key, kind, turn, ${payloadColumn(options)} AS payload, created_at FROM run_events
      WHERE run_id = $1 AND event_key = $2`,
    [runId, eventKey],
  )) as RunEventRow[];
  return row && toStoredRunEvent(row);
}

function payloadColumn(options: { withoutFullOutput?: boolean }): string {
  return options.withoutFullOutput ? `payload - 'full_output'` : 'payload';
}

/** Larger than every event id: where a page of the newest entries starts. */
export const PAST_LAST_ID = '9223372036854775807';

/**
 * The SQL for a run's entries after (or before) event id `$2`, in that direction; `$1` is the run.
 * A range over (run_id, id) rather than `run_id = $1 ... ORDER BY id`: given the equality, the
 * planner may walk the primary key instead and skip over every later entry of other runs (all of
 * them, for an old run); this order only run_events_run_id serves, reading just the rows returned.
 */
export function runEventsRange(direction: 'after' | 'before', inclusive = false): { where: string; orderBy: string } {
  const eq = inclusive ? '=' : '';
  return direction === 'after'
    ? { where: `run_id <= $1 AND (run_id, id) >${eq} ($1, $2)`, orderBy: 'run_id, id' }
    : { where: `run_id >= $1 AND (run_id, id) <${eq} ($1, $2)`, orderBy: 'run_id DESC, id DESC' };
}

/**
 * Up to `limit` of a run's transcript entries in order, by keyset on `id`: those after `afterId`,
 * or else the newest ones (before `beforeId` when given). `hasMore`: more lie beyond, in the
 * direction read.
 */
export async function loadRunEventsPage(
  manager: EntityManager,
  runId: string,
  page: { afterId?: string; beforeId?: string; limit: number },
): Promise<{ events: StoredRunEvent[]; hasMore: boolean }> {
  const forward = page.afterId !== undefined;
  const range = runEventsRange(forward ? 'after' : 'before');
  const rows = (await manager.query(
    `SELECT id, event_key, kind, turn, payload, created_at FROM run_events
      WHERE ${range.where} ORDER BY ${range.orderBy} LIMIT $3`,
    [runId, page.afterId ?? page.beforeId ?? PAST_LAST_ID, page.limit + 1],
  )) as RunEventRow[];
  const events = rows.slice(0, page.limit).map(toStoredRunEvent);
  return { events: forward ? events : events.reverse(), hasMore: rows.length > page.limit };
}

/** Whether a run has a transcript entry with an id at most, or at least, the one given. */
export async function hasRunEvents(
  manager: EntityManager,
  runId: string,
  where: { idAtMost: string } | { idAtLeast: string },
): Promise<boolean> {
  const [range, id] =
    'idAtMost' in where
      ? [runEventsRange('before', true), where.idAtMost]
      : [runEventsRange('after', true), where.idAtLeast];
  const rows = (await manager.query(`SELECT 1 FROM run_events WHERE ${range.where} ORDER BY ${range.orderBy} LIMIT 1`, [
    runId,
    id,
  ])) as unknown[];
  return rows.length > 0;
}

/**
 * Up to `limit` of the entries after `afterId` that the conversation endpoint shows as actions,
 * without the full command outputs it does not show. A `read_skill` tool call is left out: its
 * `skill_load` entry stands for it.
 */
export async function loadConversationEvents(
  manager: EntityManager,
  runId: string,
  page: { afterId: string; limit: number },
): Promise<StoredRunEvent[]> {
  const range = runEventsRange('after');
  const rows = (await manager.query(
    `SELECT id, event_key, kind, turn, payload - 'full_output' AS payload, created_at FROM run_events
      WHERE ${range.where}
        AND (kind IN ('prompt', 'followup', 'assistant', 'skill_load', 'files_changed')
             OR (kind = 'tool_call' AND payload->>'name' IS DISTINCT FROM 'read_skill'))
      ORDER BY ${range.orderBy} LIMIT $3`,
    [runId, page.afterId, page.limit],
  )) as RunEventRow[];
  return rows.map(toStoredRunEvent);
}

/**
 * The entries a run's timeline is made of, in order: its state changes, the notice of each
 * workspace made for it (key `workspace-t…`), and each `config` entry (the agent set up).
 */
export async function loadTimelineEntries(manager: EntityManager, runId: string): Promise<StoredRunEvent[]> {
  const range = runEventsRange('after');
  const rows = (await manager.query(
    `SELECT id, event_key, kind, turn, payload, created_at FROM run_events
      WHERE ${range.where}
        AND (kind IN ('state', 'config') OR (kind = 'notice' AND event_key LIKE 'workspace-t%'))
      ORDER BY ${range.orderBy}`,
    [runId, '0'],
  )) as RunEventRow[];
  return rows.map(toStoredRunEvent);
}

/** The latest diff of every file a run's steps recorded, as a digest (md5) per repository and path. */
export async function latestDiffDigests(manager: EntityManager, runId: string): Promise<Map<string, string>> {
  const rows = (await manager.query(
    `SELECT DISTINCT ON (f->>'repo', f->>'path') f->>'repo' AS repo, f->>'path' AS path, md5(f->>'diff') AS digest,
            f->>'diff' = '' AS reverted
       FROM run_events e CROSS JOIN LATERAL jsonb_array_elements(e.payload->'files') f
      WHERE e.run_id = $1 AND e.kind = 'files_changed'
      ORDER BY f->>'repo', f->>'path', e.id DESC`,
    [runId],
  )) as { repo: string; path: string; digest: string; reverted: boolean }[];
  return new Map(rows.filter((r) => !r.reverted).map((r) => [`${r.repo}\0${r.path}`, r.digest]));
}

/** Which of `keys` a run's transcript has: one look-up by key each, however long the transcript. */
export async function recordedEventKeys(
  manager: EntityManager,
  runId: string,
  keys: readonly string[],
): Promise<Set<string>> {
  const rows = (await manager.query(
    `SELECT event_key FROM run_events WHERE run_id = $1 AND event_key = ANY($2::text[])`,
    [runId, keys],
  )) as { event_key: string }[];
  return new Set(rows.map((r) => r.event_key));
}

/**
 * Up to `limit` of a run's entries after event id `afterId`, in order, and no more than about
 * `maxBytes` of payload JSON (at least one entry, however large): what an event stream holds in
 * memory at once. `more`: entries lie beyond.
 */
export async function loadRunEventsAfter(
  manager: EntityManager,
  runId: string,
  afterId: string,
  page: { limit: number; maxBytes: number },
): Promise<{ events: StoredRunEvent[]; more: boolean }> {
  const range = runEventsRange('after');
  const rows = (await manager.query(
    `SELECT id, event_key, kind, turn, payload, created_at, page_rows FROM (
       SELECT p.*, count(*) OVER () AS page_rows, row_number() OVER w AS n, sum(p.size) OVER w - p.size AS bytes_before
         FROM (SELECT id, event_key, kind, turn, payload, created_at, octet_length(payload::text) AS size
                 FROM run_events WHERE ${range.where} ORDER BY ${range.orderBy} LIMIT $3 + 1) p
       WINDOW w AS (ORDER BY p.id)) sized
      WHERE n <= $3 AND bytes_before < $4 ORDER BY id`,
    [runId, afterId, page.limit, page.maxBytes],
  )) as (RunEventRow & { page_rows: string })[];
  return { events: rows.map(toStoredRunEvent), more: rows.length > 0 && Number(rows[0]!.page_rows) > rows.length };
}

/**
 * A run's state and, once it has ended, the milliseconds left of its idle window
 * (`ended_at + config.idle_timeout_minutes`, 0 when past), by the database's clock; null when
 * the run does not exist.
 */
export async function runIdleWindow(
  manager: EntityManager,
  runId: string,
): Promise<{ state: RunState; leftMs: number | null } | null> {
  const [row] = (await manager.query(
    `SELECT state, GREATEST(0, ceil(1000 * extract(epoch FROM
              ended_at + make_interval(mins => COALESCE((config->>'idle_timeout_minutes')::int, 0)) - clock_timestamp())
            ))::float8 AS left_ms
       FROM runs WHERE run_id = $1`,
    [runId],
  )) as { state: RunState; left_ms: number | null }[];
  return row ? { state: row.state, leftMs: row.left_ms } : null;
}

/** Whether a run's agent loaded the bundled skill `skillId` with read_skill (a `skill_load` entry). */
export async function hasLoadedBundledSkill(manager: EntityManager, runId: string, skillId: string): Promise<boolean> {
  const rows = (await manager.query(
    `SELECT 1 FROM run_events
      WHERE run_id = $1 AND kind = 'skill_load' AND payload->'input'->>'bundled_skill_id' = $2 LIMIT 1`,
    [runId, skillId],
  )) as unknown[];
  return rows.length > 0;
}

/** Whether the run has an entry with this key. */
export async function hasRunEvent(manager: EntityManager, runId: string, eventKey: string): Promise<boolean> {
  const rows = (await manager.query(`SELECT 1 FROM run_events WHERE run_id = $1 AND event_key = $2`, [
    runId,
    eventKey,
  ])) as unknown[];
  return rows.length > 0;
}
