import { randomBytes } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { type TaskStage, type FactoryTask, COLUMNS, toTask } from './factory-task-reads';

export function newTaskUid(): string {
  return `tsk_${randomBytes(12).toString('base64url')}`;
}

/**
 * Binds a new task to a conversation; null when the conversation already has a live task (the
 * unique index decides, so two concurrent creates cannot both bind it).
 */
export async function insertTask(
  manager: EntityManager,
  task: Omit<FactoryTask, 'uid' | 'createdAt' | 'updatedAt'>,
): Promise<FactoryTask | null> {
  const rows = (await manager.query(
    `INSERT INTO factory_tasks (uid, team_id, factory_uid, conversation_id, title, description, stage, author_uid, author_display_name)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (conversation_id) WHERE deleted_at IS NULL DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      newTaskUid(),
      task.teamId,
      task.factoryUid,
      task.conversationId,
      task.title,
      task.description,
      task.stage,
      task.author.uid,
      task.author.displayName,
    ],
  )) as Record<string, unknown>[];
  return rows[0] ? toTask(rows[0]) : null;
}

/** Changes what `changes` names (last write wins); null when the task is gone. */
export async function updateTask(
  manager: EntityManager,
  factoryUid: string,
  uid: string,
  changes: { title?: string; description?: string | null; stage?: TaskStage },
): Promise<FactoryTask | null> {
  const rows = (await manager.query(
    `UPDATE factory_tasks SET
       title = COALESCE($3, title),
       description = CASE WHEN $4::boolean THEN $5 ELSE description END,
       stage = COALESCE($6, stage),
       updated_at = GREATEST(clock_timestamp(), updated_at + interval '1 millisecond')
     WHERE uid = $1 AND factory_uid = $2 AND deleted_at IS NULL
     RETURNING ${COLUMNS}`,
    [
      uid,
      factoryUid,
      changes.title ?? null,
      'description' in changes,
      changes.description || null,
      changes.stage ?? null,
    ],
  )) as [Record<string, unknown>[], number];
  const [updated] = rows[0];
  return updated ? toTask(updated) : null;
}

/** Soft-deletes a live task; false when there was none. */
export async function softDeleteTask(manager: EntityManager, factoryUid: string, uid: string): Promise<boolean> {
  const [, count] = (await manager.query(
    `UPDATE factory_tasks SET deleted_at = clock_timestamp() WHERE uid = $1 AND factory_uid = $2 AND deleted_at IS NULL`,
    [uid, factoryUid],
  )) as [unknown[], number];
  return count === 1;
}
