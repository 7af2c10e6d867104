import type { EntityManager } from 'typeorm';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

export const TASK_STAGES = ['TRIAGE', 'SPEC', 'IMPLEMENT', 'REVIEW', 'COMPLETE', 'CANCELLED'] as const;
export type TaskStage = (typeof TASK_STAGES)[number];

export interface FactoryTask {
  uid: string;
  teamId: string;
  factoryUid: string;
  conversationId: string;
  title: string;
  description: string | null;
  stage: TaskStage;
  author: { uid: string; displayName: string };
  createdAt: Date;
  updatedAt: Date;
}

export const COLUMNS = `uid, team_id, factory_uid, conversation_id, title, description, stage, author_uid, author_display_name, created_at, updated_at`;

export function toTask(row: Record<string, unknown>): FactoryTask {
  return {
    uid: row.uid as string,
    teamId: row.team_id as string,
    factoryUid: row.factory_uid as string,
    conversationId: row.conversation_id as string,
    title: row.title as string,
    description: (row.description as string | null) ?? null,
    stage: row.stage as TaskStage,
    author: { uid: row.author_uid as string, displayName: row.author_display_name as string },
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/** The live task bound to a conversation, in any factory of any team (the binding is unique). */
export async function findLiveTaskOfConversation(
  manager: EntityManager,
  conversationId: string,
): Promise<FactoryTask | null> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM factory_tasks WHERE conversation_id = $1 AND deleted_at IS NULL`,
    [conversationId],
  )) as Record<string, unknown>[];
  return rows[0] ? toTask(rows[0]) : null;
}

/** A live task of the factory; null when there is none (deleted, or another factory's). */
export async function findTask(manager: EntityManager, factoryUid: string, uid: string): Promise<FactoryTask | null> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM factory_tasks WHERE uid = $1 AND factory_uid = $2 AND deleted_at IS NULL`,
    [uid, factoryUid],
  )) as Record<string, unknown>[];
  return rows[0] ? toTask(rows[0]) : null;
}

/** The factory's live task bound to `conversationId`; null when none is (or another factory's is). */
export async function findTaskByConversation(
  manager: EntityManager,
  factoryUid: string,
  conversationId: string,
): Promise<FactoryTask | null> {
  const task = await findLiveTaskOfConversation(manager, conversationId);
  return task && task.factoryUid === factoryUid ? task : null;
}

export interface TaskListFilters {
  stages?: TaskStage[];
  /** Words in the title or description (any case). */
  q?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  /** Author uids or display names. */
  createdBy?: string[];
}

export const TASK_ORDERS = {
  created_at: { column: 'created_at', type: 'timestamptz', key: 'uid', direction: 'DESC' },
  updated_at: { column: 'updated_at', type: 'timestamptz', key: 'uid', direction: 'DESC' },
} satisfies Record<string, KeysetOrder>;

/** A page of the factory's live tasks, filtered, in `order`. */
export async function listTasks(
  manager: EntityManager,
  factoryUid: string,
  filters: TaskListFilters,
  order: KeysetOrder,
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<FactoryTask>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    {
      columns: COLUMNS,
      from: 'factory_tasks',
      where: `factory_uid = $1 AND deleted_at IS NULL
        AND ($2::text[] IS NULL OR stage = ANY($2::text[]))
        AND ($3::text IS NULL OR strpos(lower(title || ' ' || COALESCE(description, '')), lower($3::text)) > 0)
        AND ($4::timestamptz IS NULL OR created_at > $4::timestamptz)
        AND ($5::timestamptz IS NULL OR created_at < $5::timestamptz)
        AND ($6::timestamptz IS NULL OR updated_at > $6::timestamptz)
        AND ($7::text[] IS NULL OR author_uid = ANY($7::text[]) OR author_display_name = ANY($7::text[]))`,
      params: [
        factoryUid,
        filters.stages?.length ? filters.stages : null,
        filters.q ?? null,
        filters.createdAfter ?? null,
        filters.createdBefore ?? null,
        filters.updatedAfter ?? null,
        filters.createdBy?.length ? filters.createdBy : null,
      ],
    },
    order,
    page.limit,
    page.after,
  );
  return { rows: rows.map(toTask), ...(next ? { next } : {}) };
}
