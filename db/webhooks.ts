import type { EntityManager } from 'typeorm';
import { type Webhook, COLUMNS, toWebhook } from './webhook-reads';

/** Inserts a webhook; the caller checks the team's cap in the same transaction (services/team-caps.ts). */
export async function insertWebhook(manager: EntityManager, webhook: Omit<Webhook, 'createdAt'>): Promise<Webhook> {
  const [row] = (await manager.query(
    `INSERT INTO webhooks (id, team_id, url, event_types, secret, task_queue)
     VALUES ($1, $2, $3, $4::text[], $5, $6) RETURNING ${COLUMNS}`,
    [webhook.id, webhook.teamId, webhook.url, webhook.eventTypes, webhook.encryptedSecret, webhook.taskQueue],
  )) as Record<string, unknown>[];
  return toWebhook(row!);
}

/** Deletes a webhook of the team with its delivery log; false when it has none by that id. */
export async function deleteWebhook(manager: EntityManager, id: string, teamId: string): Promise<boolean> {
  const [, count] = (await manager.query(`DELETE FROM webhooks WHERE id = $1 AND team_id = $2`, [id, teamId])) as [
    unknown[],
    number,
  ];
  return count > 0;
}
