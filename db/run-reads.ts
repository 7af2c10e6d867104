import type { EntityManager } from 'typeorm';
import { TASK_STATUS_STATES, type RunSource, type RunState, type TaskStatus } from '../core/run-state';
import type { Run } from './rows/run';

export type RunSortField = 'updated_at' | 'created_at' | 'title' | 'agent';
export type SortOrder = 'asc' | 'desc';

export interface RunFilters {
  states?: string[];
  /** `task_status`: any of them (core/run-state.ts, TASK_STATUS_STATES). */
  taskStatuses?: TaskStatus[];
  name?: string;
  modelId?: string;
  creator?: string;
  source?: string;
  /** null selects runs without an environment. */
  environmentId?: string | null;
  skillSpec?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  q?: string;
  metadata?: Record<string, string>;
  /** Runs created by this schedule. */
  scheduleId?: string;
  /** Runs with at least one artifact of this type. */
  artifactType?: string;
  /** Every run below this one (its children, their children, ...). */
  ancestorRunId?: string;
  /** Runs executed by an agent of this factory. */
  factoryUid?: string;
  /** Filters the service knows but no run here can match. */
  matchesNothing?: boolean;
}

export interface RunPageRequest {
  teamId: string;
  filters: RunFilters;
  sortBy: RunSortField;
  sortOrder: SortOrder;
  limit: number;
  after?: { value: string; runId: string };
}

/** What a RunItem is built from: every column `rowToRun` reads, and not the heavy ones it does not (advertised skills). */
const RUN_ITEM_COLUMNS = [
  'run_id',
  'team_id',
  'creator_uid',
  'creator_type',
  'creator_display_name',
  'executor_uid',
  'executor_display_name',
  'title',
  'prompt',
  'state',
  'turn',
  'config',
  'name',
  'model_id',
  'environment_id',
  'skill_spec',
  'source',
  'schedule',
  'metadata',
  'conversation_id',
  'parent_run_id',
  'root_run_id',
  'factory_uid',
  'session_id',
  'status_message',
  'agent_skill',
  'total_tokens',
  'inference_cost_usd',
  'cancel_requested_at',
  'cancel_requested_by',
  'worker_id',
  'image_reference',
  'image_digest',
  'forked_from_run_id',
  'forked_from_checkpoint_id',
  'started_at',
  'ended_at',
  'created_at',
  'updated_at',
]
  .map((c) => `r.${c}`)
  .join(', ');

const SORT_SQL: Record<RunSortField, string> = {
  updated_at: 'r.updated_at',
  created_at: 'r.created_at',
  title: 'r.title COLLATE "C"',
  agent: 'r.skill_spec COLLATE "C"',
};

/** The `task_status` filter: its own states, and for `running` a live descendant too. */
function taskStatusFilter(statuses: TaskStatus[], add: (sql: (p: string) => string, value: unknown) => void): void {
  const own = [...new Set(statuses.flatMap((s) => TASK_STATUS_STATES[s]))];
  if (!statuses.includes('running')) return add((p) => `r.state = ANY(${p}::text[])`, own);
  const live = TASK_STATUS_STATES.running.map((state) => `'${state}'`).join(', ');
  add(
    (p) =>
      `(r.state = ANY(${p}::text[]) OR EXISTS (SELECT 1 FROM run_lineage l JOIN runs d ON d.run_id = l.run_id
         WHERE l.ancestor_run_id = r.run_id AND d.state IN (${live})))`,
    own,
  );
}

/**
 * The keyset condition of the rows after the cursor's. By `agent` (the skill), runs without one
 * come last in either order: the cursor's empty value stands for theirs (a skill spec is never empty).
 */
function afterCursor(page: RunPageRequest, params: unknown[]): string {
  const { value, runId } = page.after!;
  const cmp = page.sortOrder === 'asc' ? '>' : '<';
  const sortExpr = SORT_SQL[page.sortBy];
  const param = (v: unknown) => `$${params.push(v)}`;
  if (page.sortBy === 'agent' && value === '')
    return `(r.skill_spec IS NULL AND r.run_id ${cmp} ${param(runId)}::uuid)`;
  const cast = page.sortBy === 'title' || page.sortBy === 'agent' ? '::text COLLATE "C"' : '::timestamptz';
  const after = `(${sortExpr}, r.run_id) ${cmp} (${param(value)}${cast}, ${param(runId)}::uuid)`;
  // A row without a skill compares as null: those rows, all after this one, are added explicitly.
  return page.sortBy === 'agent' ? `(${after} OR r.skill_spec IS NULL)` : after;
}

/** One page of a team's runs, in keyset order; fetches one extra row to tell whether more follow. */
export async function listRuns(
  manager: EntityManager,
  page: RunPageRequest,
): Promise<{ runs: Run[]; hasMore: boolean }> {
  // A run whose workflow is not known to exist yet is not listed: its create may have been cut off.
  const where: string[] = ['r.team_id = $1', 'r.workflow_started'];
  const params: unknown[] = [page.teamId];
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  const f = page.filters;
  if (f.matchesNothing) where.push('false');
  if (f.states?.length) add((p) => `r.state = ANY(${p}::text[])`, f.states);
  if (f.taskStatuses?.length) taskStatusFilter(f.taskStatuses, add);
  if (f.name !== undefined) add((p) => `r.name = ${p}`, f.name);
  if (f.modelId !== undefined) add((p) => `r.model_id = ${p}`, f.modelId);
  if (f.creator !== undefined) add((p) => `r.creator_uid = ${p}`, f.creator);
  if (f.source !== undefined) add((p) => `r.source = ${p}`, f.source);
  if (f.environmentId === null) where.push('r.environment_id IS NULL');
  else if (f.environmentId !== undefined) add((p) => `r.environment_id = ${p}`, f.environmentId);
  if (f.skillSpec !== undefined) add((p) => `r.skill_spec = ${p}`, f.skillSpec);
  if (f.scheduleId !== undefined) add((p) => `r.schedule->>'schedule_id' = ${p}`, f.scheduleId);
  if (f.factoryUid !== undefined) add((p) => `r.factory_uid = ${p}`, f.factoryUid);
  if (f.ancestorRunId !== undefined) {
    add(
      (p) => `r.run_id IN (SELECT l.run_id FROM run_lineage l WHERE l.ancestor_run_id = ${p}::uuid)`,
      f.ancestorRunId,
    );
  }
  if (f.createdAfter) add((p) => `r.created_at > ${p}`, f.createdAfter);
  if (f.createdBefore) add((p) => `r.created_at < ${p}`, f.createdBefore);
  if (f.updatedAfter) add((p) => `r.updated_at > ${p}`, f.updatedAfter);
  if (f.q !== undefined) {
    const pattern = `%${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    // Each side on its own column, so that each uses its trigram index (a NULL skill_spec matches nothing either way).
    add((p) => `(r.title ILIKE ${p} OR r.prompt ILIKE ${p} OR r.skill_spec ILIKE ${p})`, pattern);
  }
  if (f.metadata && Object.keys(f.metadata).length) add((p) => `r.metadata @> ${p}::jsonb`, JSON.stringify(f.metadata));
  if (f.artifactType === 'EXTERNAL_REFERENCE') {
    where.push(`EXISTS (SELECT 1 FROM run_external_references x WHERE x.run_id = r.run_id)`);
  } else if (f.artifactType === 'PLAN') {
    where.push(`EXISTS (SELECT 1 FROM run_plans p WHERE p.run_id = r.run_id)`);
  } else if (f.artifactType === 'PULL_REQUEST') {
    where.push(`EXISTS (SELECT 1 FROM run_pull_requests q WHERE q.run_id = r.run_id AND q.url IS NOT NULL)`);
  } else if (f.artifactType !== undefined) {
    add(
      (p) => `EXISTS (SELECT 1 FROM artifacts a WHERE a.run_id = r.run_id AND a.artifact_type = ${p})`,
      f.artifactType,
    );
  }

  const sortExpr = SORT_SQL[page.sortBy];
  const dir = page.sortOrder === 'asc' ? 'ASC' : 'DESC';
  if (page.after) where.push(afterCursor(page, params));
  params.push(page.limit + 1);
  // The page's ids first, then its rows: when every column the filters and the sort read is in
  // one index (a time range under the other time sort), the first part is an index-only scan
  // that skips non-matching entries without reading their rows.
  const order = `${sortExpr} ${dir}${page.sortBy === 'agent' ? ' NULLS LAST' : ''}, r.run_id ${dir}`;
  const sql = `WITH page AS (SELECT r.run_id FROM runs r WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT $${params.length})
    SELECT ${RUN_ITEM_COLUMNS} FROM page JOIN runs r USING (run_id) ORDER BY ${order}`;
  const raw = (await manager.query(sql, params)) as Record<string, unknown>[];
  const runs = raw.map(rowToRun);
  return { runs: runs.slice(0, page.limit), hasMore: runs.length > page.limit };
}

export async function findRun(manager: EntityManager, runId: string, teamId?: string): Promise<Run | null> {
  const rows = (await manager.query(
    `SELECT r.* FROM runs r WHERE r.run_id = $1 AND ($2::uuid IS NULL OR r.team_id = $2::uuid)`,
    [runId, teamId ?? null],
  )) as Record<string, unknown>[];
  return rows[0] ? rowToRun(rows[0]) : null;
}

export async function findRunBySession(manager: EntityManager, sessionId: string): Promise<Run | null> {
  const rows = (await manager.query(`SELECT r.* FROM runs r WHERE r.session_id = $1`, [sessionId])) as Record<
    string,
    unknown
  >[];
  return rows[0] ? rowToRun(rows[0]) : null;
}

/** A team's runs of one conversation in creation order, each with the skills it advertised to its agent. */
export async function listConversationRuns(
  manager: EntityManager,
  conversationId: string,
  teamId: string,
): Promise<{ run: Run; advertisedSkills: { name: string }[] }[]> {
  const rows = (await manager.query(
    `SELECT r.* FROM runs r WHERE r.conversation_id = $1 AND r.team_id = $2 ORDER BY r.created_at, r.run_id`,
    [conversationId, teamId],
  )) as Record<string, unknown>[];
  return rows.map((row) => ({
    run: rowToRun(row),
    advertisedSkills: (row.advertised_skills as { name: string }[] | null) ?? [],
  }));
}

/**
 * The runs of a conversation, oldest first, whatever their team: only for a signed download URL
 * (the signature is the capability; a conversation's runs are all of one team).
 */
export async function listConversationRunsUnscoped(manager: EntityManager, conversationId: string): Promise<Run[]> {
  const rows = (await manager.query(
    `SELECT r.* FROM runs r WHERE r.conversation_id = $1 ORDER BY r.created_at, r.run_id`,
    [conversationId],
  )) as Record<string, unknown>[];
  return rows.map(rowToRun);
}

/** Maps a raw `runs` row (snake_case) to the entity shape. */
export function rowToRun(row: Record<string, unknown>): Run {
  return {
    runId: row.run_id as string,
    teamId: row.team_id as string,
    creatorUid: row.creator_uid as string,
    creatorType: row.creator_type as Run['creatorType'],
    creatorDisplayName: row.creator_display_name as string,
    executorUid: (row.executor_uid as string | null) ?? null,
    executorDisplayName: (row.executor_display_name as string | null) ?? null,
    title: row.title as string,
    prompt: row.prompt as string,
    state: row.state as RunState,
    turn: row.turn as number,
    config: row.config as Run['config'],
    name: (row.name as string | null) ?? null,
    modelId: row.model_id as string,
    environmentId: (row.environment_id as string | null) ?? null,
    skillSpec: (row.skill_spec as string | null) ?? null,
    source: row.source as RunSource,
    schedule: (row.schedule as Run['schedule']) ?? null,
    metadata: (row.metadata as Record<string, string>) ?? {},
    conversationId: row.conversation_id as string,
    parentRunId: (row.parent_run_id as string | null) ?? null,
    rootRunId: (row.root_run_id as string | null) ?? (row.run_id as string),
    factoryUid: (row.factory_uid as string | null) ?? null,
    sessionId: row.session_id as string,
    statusMessage: (row.status_message as Run['statusMessage']) ?? null,
    agentSkill: (row.agent_skill as Run['agentSkill']) ?? null,
    totalTokens: String(row.total_tokens ?? '0'),
    inferenceCostUsd: (row.inference_cost_usd as string | null) ?? null,
    cancelRequestedAt: (row.cancel_requested_at as Date | null) ?? null,
    cancelRequestedBy: (row.cancel_requested_by as string | null) ?? null,
    workerId: (row.worker_id as string | null) ?? null,
    image: row.image_digest ? { reference: row.image_reference as string, digest: row.image_digest as string } : null,
    forkedFrom: row.forked_from_run_id
      ? { runId: row.forked_from_run_id as string, checkpointId: row.forked_from_checkpoint_id as string }
      : null,
    startedAt: (row.started_at as Date | null) ?? null,
    endedAt: (row.ended_at as Date | null) ?? null,
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/** Whether the team has a run in that conversation. */
export async function isConversationOfTeam(
  manager: EntityManager,
  conversationId: string,
  teamId: string,
): Promise<boolean> {
  const rows = (await manager.query(`SELECT 1 FROM runs WHERE conversation_id = $1 AND team_id = $2 LIMIT 1`, [
    conversationId,
    teamId,
  ])) as unknown[];
  return rows.length > 0;
}

/** The WORKER_ID a run is pinned to (`config.worker_host`), or null. */
export async function runWorkerHost(manager: EntityManager, runId: string): Promise<string | null> {
  const rows = (await manager.query(`SELECT config->>'worker_host' AS host FROM runs WHERE run_id = $1`, [runId])) as {
    host: string | null;
  }[];
  return rows[0]?.host ?? null;
}
