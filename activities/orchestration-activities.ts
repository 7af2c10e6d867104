import { ApiError } from '../core/api-error';
import { isUuid } from '../core/ids';
import { isTerminal } from '../core/run-state';
import type { AgentIdentity } from '../db/agent-identity-reads';
import { listFactoryAgents } from '../db/agent-identity-reads';
import { findFactory } from '../db/factory-reads';
import { appendRunEvent } from '../db/run-events';
import { childRunStatuses, findDispatchedChild, unfinishedDescendants } from '../db/run-lineage-reads';
import { findRun } from '../db/run-reads';
import { recordCancelRequest } from '../db/run-store';
import type { OrchestrationCall } from '../workflows/run-contract';
import { createRunService, type RunAccepted } from '../services/runs/run-service';
import { runWorkflowOptions } from '../services/runs/run-workflow-options';
import { toolCallKeys } from './agent-step-activities';
import type { ActivityDeps } from './deps';

/** The longest prompt a dispatched agent gets, as for a run created through the API. */
const MAX_DISPATCH_PROMPT_CHARS = 100_000;
const MAX_WAIT_SECONDS = 86_400;

/** A dispatch the workflow can start, or the tool error the agent is told instead. */
export type PreparedChild =
  | { ok: true; childRunId: string; agent: string; workflow: ReturnType<typeof runWorkflowOptions> }
  | { ok: false; error: string };

export type ChildrenToWait =
  { ok: true; runIds: string[]; ended: string[]; timeoutSeconds?: number } | { ok: false; error: string };

/**
 * The database side of a factory agent's `dispatch_agent` and `wait_for_runs`, and of the
 * cancellation of a run's descendants. The workflow does the Temporal side (child workflows,
 * waits, cancellation requests); every write here is keyed, so a retry repeats nothing.
 */
export function createOrchestrationActivities({
  dataSource,
  config,
  logger,
  temporal,
  secretsKeyring,
  blobs,
  objectStore,
}: ActivityDeps) {
  const runService = createRunService({ config, dataSource, temporal, secretsKeyring, blobs, objectStore, logger });

  /** How the workflow starts a dispatched child, and whom it was dispatched to. */
  async function dispatched(childRunId: string): Promise<PreparedChild> {
    const child = (await findRun(dataSource.manager, childRunId))!;
    return {
      ok: true,
      childRunId,
      agent: child.executorDisplayName ?? '',
      workflow: runWorkflowOptions(config, child, 'QUEUED'),
    };
  }

  /** The factory agent `wanted` names: a uid, a name (a file agent's short name too), or an agent type. */
  function pickAgent(agents: AgentIdentity[], wanted: string): AgentIdentity | string {
    const byId = agents.find((a) => a.uid === wanted || a.name === wanted);
    if (byId) return byId;
    const byShortName = agents.filter((a) => a.name.slice(a.name.lastIndexOf('/') + 1) === wanted);
    if (byShortName.length === 1) return byShortName[0]!;
    const byType = agents.filter((a) => a.agentType === wanted.toUpperCase());
    if (byType.length === 1) return byType[0]!;
    const listed = agents.map((a) => `${a.name} (${a.agentType})`).join(', ');
    if (byType.length > 1 || byShortName.length > 1) {
      return `Several agents of your factory match "${wanted}": ${(byType.length > 1 ? byType : byShortName)
        .map((a) => a.name)
        .join(', ')}. Name one of them.`;
    }
    return `Your factory has no agent "${wanted}". Its agents: ${listed || 'none'}.`;
  }

  return {
    /**
     * Records the child run a `dispatch_agent` call asks for, through the run service as every
     * run is made (its checks, the team's hourly limit, idempotency keyed by its position: a
     * retry finds the same child), and returns how to start its workflow, or why it cannot be
     * dispatched.
     */
    async prepareChildRun({
      parentRunId,
      turn,
      step,
      call,
    }: {
      parentRunId: string;
      turn: number;
      step: number;
      call: OrchestrationCall;
    }): Promise<PreparedChild> {
      const dispatchKey = `t${turn}-s${step}-c${call.index}`;
      const parent = await findRun(dataSource.manager, parentRunId);
      if (!parent) throw new Error(`run ${parentRunId} does not exist`);
      // A retry after the child was recorded answers with it before anything is checked again
      // (the factory or its agents may have changed since).
      const existing = await findDispatchedChild(dataSource.manager, parentRunId, dispatchKey);
      if (existing) return dispatched(existing);
      const { agent: wanted, prompt } = call.arguments;
      if (typeof wanted !== 'string' || !wanted.trim()) {
        return { ok: false, error: '`agent` must name an agent of your factory (its name, uid or agent type).' };
      }
      if (typeof prompt !== 'string' || !prompt.trim()) {
        return { ok: false, error: '`prompt` must be the non-empty task for that agent.' };
      }
      if (prompt.length > MAX_DISPATCH_PROMPT_CHARS) {
        return { ok: false, error: `\`prompt\` is ${prompt.length} characters; at most ${MAX_DISPATCH_PROMPT_CHARS}.` };
      }
      const factory = parent.factoryUid
        ? await findFactory(dataSource.manager, parent.factoryUid, parent.teamId)
        : null;
      if (!factory)
        return { ok: false, error: 'The factory of this run no longer exists: there is no one to dispatch to.' };
      const agent = pickAgent(await listFactoryAgents(dataSource.manager, parent.teamId, factory.uid), wanted.trim());
      if (typeof agent === 'string') return { ok: false, error: agent };
      let created: RunAccepted;
      try {
        created = await runService.createChildRun(parent, { agentUid: agent.uid, prompt, dispatchKey });
      } catch (err) {
        // A refusal (the team's hourly limit, the tree's bounds, the agent's harness...) is the
        // foreman's to act on; trouble that may pass (a database outage) is retried.
        if (err instanceof ApiError && (err.code === 'rate_limited' || !err.retryable)) {
          return { ok: false, error: `Not dispatched: ${err.detail}` };
        }
        throw err;
      }
      return dispatched(created.runId);
    },

    /** The runs a `wait_for_runs` call waits for (this run's own children only), and which have ended. */
    async childrenToWait({ runId, call }: { runId: string; call: OrchestrationCall }): Promise<ChildrenToWait> {
      const { run_ids: runIds, timeout_seconds: timeout } = call.arguments;
      if (
        timeout !== undefined &&
        timeout !== null &&
        (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0 || timeout > MAX_WAIT_SECONDS)
      ) {
        return {
          ok: false,
          error: `\`timeout_seconds\` must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}.`,
        };
      }
      if (
        runIds !== undefined &&
        runIds !== null &&
        !(Array.isArray(runIds) && runIds.every((id) => typeof id === 'string'))
      ) {
        return { ok: false, error: '`run_ids` must be a list of run ids that dispatch_agent returned.' };
      }
      const wanted = runIds as string[] | undefined | null;
      const children = await childRunStatuses(dataSource.manager, runId, wanted ? wanted.filter(isUuid) : undefined);
      const unknown = (wanted ?? []).filter((id) => !children.some((c) => c.runId === id));
      if (unknown.length) {
        return {
          ok: false,
          error: `Not runs this run dispatched: ${unknown.join(', ')}. ${
            children.length || !wanted ? '' : 'Omit run_ids to wait for every run you dispatched.'
          }`.trim(),
        };
      }
      return {
        ok: true,
        runIds: children.map((c) => c.runId),
        ended: children.filter((c) => isTerminal(c.state)).map((c) => c.runId),
        ...(typeof timeout === 'number' ? { timeoutSeconds: timeout } : {}),
      };
    },

    /** What `wait_for_runs` answers: each child's state and final message. */
    async describeChildren({
      runId,
      runIds,
      timedOut,
    }: {
      runId: string;
      runIds: string[];
      timedOut: boolean;
    }): Promise<{ output: string }> {
      const children = runIds.length ? await childRunStatuses(dataSource.manager, runId, runIds) : [];
      return {
        output: JSON.stringify(
          {
            runs: children.map((c) => ({
              run_id: c.runId,
              agent: c.agent,
              state: c.state,
              message: isTerminal(c.state) ? c.message : null,
            })),
            timed_out: timedOut,
            ...(runIds.length ? {} : { note: 'This run has not dispatched any runs.' }),
          },
          null,
          2,
        ),
      };
    },

    /** The result of an orchestration call, in the transcript where the step's other results are. */
    async recordOrchestrationResult({
      runId,
      turn,
      step,
      call,
      output,
      isError,
      details,
    }: {
      runId: string;
      turn: number;
      step: number;
      call: OrchestrationCall;
      output: string;
      isError: boolean;
      details?: Record<string, unknown>;
    }): Promise<void> {
      await dataSource.transaction((tx) =>
        appendRunEvent(tx, {
          runId,
          eventKey: toolCallKeys(turn, step, call.index).result,
          kind: 'tool_call',
          turn,
          payload: {
            tool_call_id: call.toolCallId,
            name: call.name,
            input: call.arguments,
            output,
            is_error: isError,
            ...details,
          },
        }),
      );
    },

    /** Records who asked on every unfinished run below `runId`, and returns them for cancelling. */
    async requestDescendantsCancel({ runId }: { runId: string }): Promise<{ runIds: string[] }> {
      const runIds = await unfinishedDescendants(dataSource.manager, runId);
      if (runIds.length) {
        await dataSource.transaction(async (tx) => {
          for (const id of runIds) await recordCancelRequest(tx, id, `the cancellation of its ancestor run ${runId}`);
        });
      }
      return { runIds };
    },
  };
}
