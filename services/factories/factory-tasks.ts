import type { DataSource, EntityManager } from 'typeorm';
import { ApiError, invalid, notFound } from '../../core/api-error';
import { ticketOfMetadata } from '../../core/factory-tickets';
import { isUuid } from '../../core/ids';
import { isTerminal } from '../../core/run-state';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { artifactsOfRuns } from '../../db/artifact-reads';
import { findFactory } from '../../db/factory-reads';
import {
  findLiveTaskOfConversation,
  findTask,
  findTaskByConversation,
  type FactoryTask,
  type TaskStage,
} from '../../db/factory-task-reads';
import { insertTask, softDeleteTask, updateTask } from '../../db/factory-tasks';
import type { Run } from '../../db/rows/run';
import { findRun, listConversationRuns } from '../../db/run-reads';
import { toArtifactItem } from '../views/artifact-views';

/** How much of a task a response shows: the list's lean view, or everything (get, `full_list`). */
export interface TaskDetail {
  currentRun: boolean;
  full: boolean;
}

/**
 * The task board of a factory (`/factory/{uid}/tasks`): tasks bound to agent conversations of
 * the factory's team, one live task per conversation, with a stage anyone may set; cancelling a
 * task cancels its current top-level run (and so its descendants) and moves it to CANCELLED.
 */
export function createFactoryTasks(deps: {
  dataSource: DataSource;
  cancelRun: (principal: AuthenticatedPrincipal, runId: string) => Promise<void>;
}) {
  const { dataSource } = deps;
  const manager = dataSource.manager;

  async function factoryOf(principal: AuthenticatedPrincipal, factoryUid: string) {
    const factory = await findFactory(manager, factoryUid, principal.teamId);
    if (!factory) throw notFound(`No factory ${factoryUid}.`);
    return factory;
  }

  /** The newest run of the task's conversation: the one the task is working through now. */
  async function currentRunOf(task: FactoryTask): Promise<Run | undefined> {
    const runs = await listConversationRuns(manager, task.conversationId, task.teamId);
    return runs.at(-1)?.run;
  }

  async function view(task: FactoryTask, detail: TaskDetail) {
    const runs = (await listConversationRuns(manager, task.conversationId, task.teamId)).map((c) => c.run);
    const current = runs.at(-1);
    const ticketRun = runs.find((r) => ticketOfMetadata(r.metadata));
    const ticket = ticketRun && ticketOfMetadata(ticketRun.metadata);
    const outputs = detail.full
      ? [
          ...(
            await artifactsOfRuns(
              manager,
              runs.map((r) => r.runId),
            )
          ).values(),
        ]
          .flat()
          // The clients' outputs are what the work made: plans are steps towards it.
          .filter((a) => a.kind !== 'PLAN')
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
          .map(toArtifactItem)
      : undefined;
    return {
      uid: task.uid,
      factory_uid: task.factoryUid,
      conversation_id: task.conversationId,
      run_id: current?.runId ?? '',
      title: task.title,
      ...(task.description !== null ? { description: task.description } : {}),
      stage: task.stage,
      author: { uid: task.author.uid, display_name: task.author.displayName },
      created_at: task.createdAt.toISOString(),
      updated_at: task.updatedAt.toISOString(),
      ...(detail.currentRun && current
        ? {
            current_run: {
              run_id: current.runId,
              state: current.state,
              is_run_type_cancellable: !isTerminal(current.state),
            },
          }
        : {}),
      ...(detail.full && ticket ? { ticket_id: ticket.id, ticket_source: ticket.source } : {}),
      ...(outputs ? { outputs } : {}),
    };
  }

  async function liveTask(principal: AuthenticatedPrincipal, factoryUid: string, uid: string) {
    await factoryOf(principal, factoryUid);
    const task = await findTask(manager, factoryUid, uid);
    if (!task) throw notFound(`No task ${uid} in factory ${factoryUid}.`);
    return task;
  }

  const ALL: TaskDetail = { currentRun: true, full: true };

  return {
    view,

    async create(
      principal: AuthenticatedPrincipal,
      factoryUid: string,
      body: { conversation_id: string; title: string; description?: string | null; stage?: TaskStage },
    ) {
      await factoryOf(principal, factoryUid);
      const runs = isUuid(body.conversation_id)
        ? await listConversationRuns(manager, body.conversation_id, principal.teamId)
        : [];
      // The request names something missing, not the resource its URL names: 400, not 404.
      if (runs.length === 0)
        throw invalid(`\`conversation_id\`: no conversation ${body.conversation_id} in your team.`);
      const task = await insertTask(manager, {
        teamId: principal.teamId,
        factoryUid,
        conversationId: body.conversation_id,
        title: body.title,
        description: body.description || null,
        stage: body.stage ?? 'TRIAGE',
        author: { uid: principal.uid, displayName: principal.displayName },
      });
      if (!task) {
        const bound = await findLiveTaskOfConversation(manager, body.conversation_id);
        throw new ApiError(
          'conflict',
          `Conversation ${body.conversation_id} is already bound to task ${bound?.teamId === principal.teamId ? bound.uid : '(of another team)'}; delete that task first, or bind another conversation.`,
        );
      }
      return view(task, ALL);
    },

    async get(principal: AuthenticatedPrincipal, factoryUid: string, uid: string) {
      return view(await liveTask(principal, factoryUid, uid), ALL);
    },

    async update(
      principal: AuthenticatedPrincipal,
      factoryUid: string,
      uid: string,
      changes: { title?: string; description?: string | null; stage?: TaskStage },
    ) {
      await liveTask(principal, factoryUid, uid);
      const task = await updateTask(manager, factoryUid, uid, changes);
      if (!task) throw notFound(`No task ${uid} in factory ${factoryUid}.`);
      return view(task, ALL);
    },

    async remove(principal: AuthenticatedPrincipal, factoryUid: string, uid: string): Promise<void> {
      await liveTask(principal, factoryUid, uid);
      if (!(await softDeleteTask(manager, factoryUid, uid))) throw notFound(`No task ${uid} in factory ${factoryUid}.`);
    },

    /** Cancels the task's current top-level run, if it is still going, and moves the task to CANCELLED. */
    async cancel(principal: AuthenticatedPrincipal, factoryUid: string, uid: string) {
      const task = await liveTask(principal, factoryUid, uid);
      const current = await currentRunOf(task);
      if (current && !isTerminal(current.state)) await deps.cancelRun(principal, current.rootRunId);
      const cancelled = await updateTask(manager, factoryUid, uid, { stage: 'CANCELLED' });
      if (!cancelled) throw notFound(`No task ${uid} in factory ${factoryUid}.`);
      return view(cancelled, ALL);
    },

    async byConversation(principal: AuthenticatedPrincipal, factoryUid: string, conversationId: string) {
      await factoryOf(principal, factoryUid);
      const task = isUuid(conversationId) ? await findTaskByConversation(manager, factoryUid, conversationId) : null;
      if (!task || task.teamId !== principal.teamId) {
        throw notFound(`No task of factory ${factoryUid} is bound to conversation ${conversationId}.`);
      }
      return view(task, ALL);
    },

    /** The task bound to the conversation of the run's root ancestor. */
    async byRun(principal: AuthenticatedPrincipal, factoryUid: string, runId: string) {
      await factoryOf(principal, factoryUid);
      const run = isUuid(runId) ? await findRun(manager, runId, principal.teamId) : null;
      const root = run && (run.rootRunId === run.runId ? run : await findRun(manager, run.rootRunId, principal.teamId));
      const task = root ? await findTaskByConversation(manager, factoryUid, root.conversationId) : null;
      if (!task) throw notFound(`No task of factory ${factoryUid} owns run ${runId}.`);
      return view(task, ALL);
    },
  };
}

export type FactoryTasksService = ReturnType<typeof createFactoryTasks>;

/**
 * The task of work just dispatched to a factory for a ticket (in the transaction that records its
 * run): bound to the run's conversation, titled as the run, in TRIAGE, its author the run's creator.
 */
export async function openDispatchedTask(tx: EntityManager, run: Run): Promise<void> {
  if (!run.factoryUid) throw new Error(`run ${run.runId} is no factory agent's: it cannot have a factory task`);
  await insertTask(tx, {
    teamId: run.teamId,
    factoryUid: run.factoryUid,
    conversationId: run.conversationId,
    title: run.title,
    description: null,
    stage: 'TRIAGE',
    author: { uid: run.creatorUid, displayName: run.creatorDisplayName },
  });
}
