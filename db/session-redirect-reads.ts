import type { EntityManager } from 'typeorm';

/** The conversation of the run a session belongs to. */
export async function conversationOfSession(manager: EntityManager, sessionId: string): Promise<string | null> {
  const rows = (await manager.query(`SELECT conversation_id FROM runs WHERE session_id = $1`, [sessionId])) as {
    conversation_id: string;
  }[];
  return rows[0]?.conversation_id ?? null;
}

/** The session of a conversation's latest run. */
export async function latestSessionOfConversation(
  manager: EntityManager,
  conversationId: string,
): Promise<string | null> {
  const rows = (await manager.query(
    `SELECT session_id FROM runs WHERE conversation_id = $1 ORDER BY created_at DESC, run_id DESC LIMIT 1`,
    [conversationId],
  )) as { session_id: string }[];
  return rows[0]?.session_id ?? null;
}
