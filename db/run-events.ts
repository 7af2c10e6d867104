import type { EntityManager } from 'typeorm';
import type { RunEventKind, RunEventPayloads } from '../core/run-events';

/** Appends a transcript entry once: a second write with the same key is a no-op. Returns whether it wrote. */
export async function appendRunEvent<K extends RunEventKind>(
  manager: EntityManager,
  event: { runId: string; eventKey: string; kind: K; turn: number; payload: RunEventPayloads[K] },
): Promise<boolean> {
  const rows = (await manager.query(
    `INSERT INTO run_events (run_id, event_key, kind, turn, payload)
     VALUES ($1, $2, $3, $4, $5::jsonb)
     ON CONFLICT (run_id, event_key) DO NOTHING RETURNING id`,
    [event.runId, event.eventKey, event.kind, event.turn, JSON.stringify(event.payload)],
  )) as unknown[];
  return rows.length > 0;
}

/** Appends a notice to the run's current turn (for events that happen outside a step, such as an MCP server's refused connection). */
export async function appendNoticeToCurrentTurn(
  manager: EntityManager,
  runId: string,
  eventKey: string,
  message: string,
): Promise<void> {
  await manager.query(
    `INSERT INTO run_events (run_id, event_key, kind, turn, payload)
     SELECT run_id, $2, 'notice', turn, $3::jsonb FROM runs WHERE run_id = $1
     ON CONFLICT (run_id, event_key) DO NOTHING`,
    [runId, eventKey, JSON.stringify({ message })],
  );
}

export interface StoredRunEvent {
  id: string;
  eventKey: string;
  kind: RunEventKind;
  turn: number;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/**
 * A run's transcript entries in order, optionally only some kinds; `withoutFullOutput` leaves out
 * what only the transcript keeps (a command's whole output), for a step that rebuilds the
 * model's conversation.
 */
export async function loadRunEvents(
  manager: EntityManager,
  runId: string,
  kinds?: readonly RunEventKind[],
  options: { withoutFullOutput?: boolean } = {},
): Promise<StoredRunEvent[]> {
  const payload = options.withoutFullOutput ? `payload - 'full_output'` : 'payload';
  const rows = (await manager.query(
    `SELECT id, event_key, kind, turn, ${payload} AS payload, created_at FROM run_events
      WHERE run_id = $1 AND ($2::text[] IS NULL OR kind = ANY($2::text[]))
      ORDER BY id`,
    [runId, kinds ?? null],
  )) as {
    id: string;
    event_key: string;
    kind: RunEventKind;
    turn: number;
    payload: Record<string, unknown>;
    created_at: Date;
  }[];
  return rows.map((r) => ({
    id: r.id,
    eventKey: r.event_key,
    kind: r.kind,
    turn: r.turn,
    payload: r.payload,
    createdAt: r.created_at,
  }));
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

/** Keys of a run's transcript entries that start with `prefix` (no payloads). */
export async function eventKeysWithPrefix(manager: EntityManager, runId: string, prefix: string): Promise<Set<string>> {
  const rows = (await manager.query(
    `SELECT event_key FROM run_events WHERE run_id = $1 AND starts_with(event_key, $2)`,
    [runId, prefix],
  )) as { event_key: string }[];
  return new Set(rows.map((r) => r.event_key));
}
