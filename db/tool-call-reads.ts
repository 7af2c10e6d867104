import type { EntityManager } from 'typeorm';

/**
 * The arguments of the run's calls of built-in tool `tool` that ran (their result is no error),
 * newest first, at most `limit`.
 */
export async function succeededToolCallInputs(
  manager: EntityManager,
  runId: string,
  tool: string,
  limit = 100,
): Promise<{ turn: number; input: Record<string, unknown> }[]> {
  const rows = (await manager.query(
    `SELECT turn, payload->'input' AS input FROM run_events
      WHERE run_id = $1 AND kind = 'tool_call' AND payload->>'name' = $2 AND payload->>'is_error' = 'false'
        AND jsonb_typeof(payload->'input') = 'object'
      ORDER BY id DESC LIMIT $3`,
    [runId, tool, limit],
  )) as { turn: number; input: Record<string, unknown> }[];
  return rows;
}
