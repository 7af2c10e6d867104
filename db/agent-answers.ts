import type { EntityManager } from 'typeorm';

/** The agent's last message with text in a turn of the run, if any. */
export async function lastAgentMessage(manager: EntityManager, runId: string, turn: number): Promise<string | null> {
  const rows = (await manager.query(
    `SELECT payload->>'text' AS text FROM run_events
      WHERE run_id = $1 AND turn = $2 AND kind = 'assistant' AND coalesce(payload->>'text', '') <> ''
      ORDER BY id DESC LIMIT 1`,
    [runId, turn],
  )) as { text: string }[];
  return rows[0]?.text ?? null;
}
