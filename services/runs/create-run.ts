import type { EntityManager } from 'typeorm';
import { ATTACHMENTS_DIR } from '../../core/attachments';
import { invalid, notFound } from '../../core/api-error';
import { newUuidV7 } from '../../core/ids';
import { observeRunCreated, type RunCreatedOrigin } from '../../core/metrics';
import { idempotencyViews } from '../../core/run-secrets';
import type { CreateRunRequest, FactoryDispatchRequest } from '../../core/schemas/run-schemas';
import { listFactoryAgents } from '../../db/agent-identity-reads';
import { recordRunAttachments } from '../../db/attachments';
import { type FileContent } from '../../db/attachment-reads';
import { findFactory } from '../../db/factory-reads';
import { markWorkflowStarted, recordNewRun, withdrawUnstartedRun } from '../../db/run-creation';
import type { Run } from '../../db/rows/run';
import { lockRunCreation } from '../../db/run-store';
import { RUN_WORKFLOW_TYPE, type AgentRunWorkflow } from '../../workflows/run-contract';
import { checkCreateRequest, decodeAttachments } from './create-request';
import type { IdempotencyClaim, StoredResponse } from './idempotency';
import type { RunOrigin } from './new-run';
import { composeRun, type ComposedRun, type TicketRequest } from './run-composition';
import type { RunPrincipal } from './run-executor';
import type { RunServiceDeps, RunWrites } from './run-writes';
import { runWorkflowOptions } from './run-workflow-options';
import { openDispatchedTask } from '../factories/factory-tasks';
import { assertTeamStorageLeft } from '../team-caps';
import type { ForkRunRequest } from '../../core/schemas/checkpoint-schemas';
import { recordFork } from '../../db/run-forks';
import { continuedCliHarness, forkRequest, planFork, type ForkPlan } from './fork-run';

/** One run's creation, as each way of making a run asks for it. */
interface Creation {
  principal: RunPrincipal;
  body: CreateRunRequest;
  claim: IdempotencyClaim | undefined;
  origin: RunOrigin;
  /** Work for a ticket (`POST /factory/{uid}/runs`): stamped with it, and given its factory task. */
  ticket?: TicketRequest;
  /**
   * Who starts the run's workflow: this service, beside the insert; or the workflow of the run's
   * parent, as its child (a factory agent's `dispatch_agent`).
   */
  startedBy: 'service' | 'parent';
  /** A fork (`POST /agent/runs/{runId}/fork`): its source's conversation and files to start from. */
  fork?: ForkPlan;
}

/** The run a creation recorded (none when it replayed an earlier one). */
interface Made {
  created: RunCreatedOrigin;
  harness: string;
}

/**
 * Creating runs: `POST /agent/runs`, schedule firings, dispatches to a factory's foreman and the
 * runs a factory agent dispatches. Each goes through `create`, the one core: checked, counted
 * against TEAM_MAX_RUNS_PER_HOUR, recorded once under its idempotency claim with its workflow
 * started beside it, or given back.
 */
export function createRunCreation(deps: RunServiceDeps, writes: RunWrites) {
  const { config, temporal, secretsKeyring, dataSource, blobs, objectStore } = deps;
  const { runsPerHour, countTeamRun, withIdempotency, storedResponseOf, claimFor, recordThenCall } = writes;

  async function create(creation: Creation): Promise<StoredResponse> {
    const skill = checkCreateRequest(config, creation.body);
    const runId = newUuidV7();
    const attachments = decodeAttachments(creation.body.attachments);
    const counted = await countOrReplay(creation);
    if (typeof counted !== 'boolean') return counted;
    let made: Made | undefined;
    try {
      const response = await recordThenCall(
        (fire) =>
          withIdempotency(creation.principal, creation.claim, async (tx) => {
            const composed = await composeRun(tx, deps, writes, { ...creation, runId, skill });
            made = { created: createdOrigin(creation.origin, composed.executor), harness: composed.harness };
            return recordRun(tx, creation, composed.run, attachments, fire);
          }),
        (tx) => withdrawUnstartedRun(tx, runId),
      );
      await settle(creation, response, made, counted);
      return response;
    } catch (err) {
      // No run was made after all: it does not count.
      if (counted) await runsPerHour?.giveBack(creation.principal.teamId);
      throw err;
    }
  }

  /**
   * Counts the run against its team's hour, before the transaction: the counter takes a
   * connection of the same pool, which a burst of transactions waiting on it would exhaust.
   * Past the limit, a replay of a run already made is still answered.
   */
  async function countOrReplay({ principal, claim }: Creation): Promise<boolean | StoredResponse> {
    try {
      await assertTeamStorageLeft(dataSource.manager, principal.teamId, config.quotas.teamMaxStoredBytes);
      return await countTeamRun(principal.teamId);
    } catch (err) {
      const replay = claim && (await storedResponseOf(claim));
      if (replay) return replay;
      throw err;
    }
  }

  /** Records the composed run (its workflow's start fired beside the insert, when this service starts it). */
  async function recordRun(
    tx: EntityManager,
    { body, ticket, startedBy, fork }: Creation,
    run: Run,
    attachments: FileContent[],
    fire: (call: () => Promise<unknown>) => void,
  ): Promise<StoredResponse> {
    const { runId } = run;
    // Held until commit: the workflow's first activity waits on it, so it never sees a half-made run.
    await lockRunCreation(tx, runId);
    if (startedBy === 'service') {
      fire(() =>
        temporal.workflow.start<AgentRunWorkflow>(RUN_WORKFLOW_TYPE, runWorkflowOptions(config, run, 'QUEUED')),
      );
    }
    const prompt = {
      mode: body.mode ?? 'normal',
      attachments: attachments.map((a) => ({
        path: `${ATTACHMENTS_DIR}/${a.fileName}`,
        mime_type: a.mimeType,
        size_bytes: a.bytes.length,
      })),
    };
    // Listed once its workflow is known to exist: a create cut off before its start never is. A
    // child's is started by its parent's workflow, which holds the answer of this creation.
    const history = fork && { sourceRunId: fork.source.runId, throughEventId: fork.checkpoint.eventsThrough };
    await recordNewRun(tx, run, prompt, startedBy === 'parent', history);
    if (fork) {
      await recordFork(tx, {
        runId,
        sourceRunId: fork.source.runId,
        checkpointId: fork.checkpoint.checkpointId,
        cliHarness: continuedCliHarness(fork.source.config, run.config),
        manifest: fork.manifest,
      });
    }
    await recordRunAttachments(tx, blobs, runId, attachments);
    // In the same transaction: a run for a ticket never exists without its task.
    if (ticket) await openDispatchedTask(tx, run);
    return {
      status: 201,
      body: {
        run_id: runId,
        task_id: runId,
        state: 'QUEUED',
        ...(fork ? { forked_from: { run_id: fork.source.runId, checkpoint_id: fork.checkpoint.checkpointId } } : {}),
      },
      headers: { Location: `/api/v1/agent/runs/${runId}` },
    };
  }

  /** After the commit: a made run is listed and counted in the metrics; a replay gives its count back. */
  async function settle(creation: Creation, response: StoredResponse, made: Made | undefined, counted: boolean) {
    const runId = (response.body as { run_id?: string }).run_id;
    if (made) {
      if (creation.startedBy === 'service') await markWorkflowStarted(dataSource.manager, runId!);
      observeRunCreated(made.created, made.harness);
      return;
    }
    if (counted) await runsPerHour?.giveBack(creation.principal.teamId);
    // A replay of a create whose API was cut off before the run's workflow started: start it now.
    if (runId && creation.startedBy === 'service') await writes.ensureWorkflowStarted(runId);
  }

  /**
   * `POST /agent/runs`, and every firing of a schedule (`origin`: its source and schedule), so
   * that a scheduled run is made exactly like any other.
   */
  async function createRun(
    principal: RunPrincipal,
    body: CreateRunRequest,
    idempotencyKey: string | undefined,
    origin: RunOrigin = { source: 'API' },
    ticket?: TicketRequest,
  ): Promise<StoredResponse> {
    const [view, ...former] = idempotencyViews(body, secretsKeyring).map((v) => (ticket ? { ...v, ticket } : v));
    const claim = claimFor(principal, 'create-run', idempotencyKey, view, former);
    return create({ principal, body, claim, origin, ticket, startedBy: 'service' });
  }

  /**
   * `POST /agent/runs/{runId}/fork`: a new run of the caller's team made as `POST /agent/runs`
   * makes one (checked, counted, under its idempotency claim), whose conversation is the source's
   * up to the checkpoint and whose workspace starts as that checkpoint.
   */
  async function forkRun(
    principal: RunPrincipal,
    sourceRunId: string,
    request: ForkRunRequest,
    idempotencyKey: string | undefined,
  ): Promise<StoredResponse> {
    const fork = await planFork(dataSource.manager, objectStore, principal, sourceRunId, request.checkpoint_id);
    const body = forkRequest(fork.source, request);
    const [view, ...former] = idempotencyViews(body, secretsKeyring).map((v) => ({
      source: fork.source.runId,
      checkpoint: fork.checkpoint.checkpointId,
      ...v,
    }));
    const claim = claimFor(principal, 'fork-run', idempotencyKey, view, former);
    return create({ principal, body, claim, origin: { source: 'API' }, startedBy: 'service', fork });
  }

  return {
    createRun,
    forkRun,

    /**
     * `POST /agent/factories/{uid}/runs`: a run of the factory's foreman, created exactly as
     * `POST /agent/runs` with the foreman's `agent_identity_uid` would be; with `ticket`
     * (`POST /factory/{uid}/runs`), work for that ticket, with its task on the factory's board.
     */
    async dispatchToFactory(
      principal: RunPrincipal,
      factoryUid: string,
      body: FactoryDispatchRequest,
      idempotencyKey: string | undefined,
      ticket?: TicketRequest,
    ): Promise<StoredResponse> {
      const foreman = await foremanOf(dataSource.manager, principal, factoryUid);
      return createRun(principal, { ...body, agent_identity_uid: foreman.uid }, idempotencyKey, undefined, ticket);
    },

    /**
     * The run a factory agent's `dispatch_agent` asks for: made as its parent's creator, executed
     * as `agentUid`, its workflow started by the parent's as a child. Its position in the parent
     * (`dispatchKey`: turn, step and call) is its idempotency key, so a retry of the dispatch
     * makes no second run; it counts against the team's hour like any other run.
     */
    async createChildRun(
      parent: Run,
      child: { agentUid: string; prompt: string; dispatchKey: string },
    ): Promise<StoredResponse> {
      const principal: RunPrincipal = {
        uid: parent.creatorUid,
        type: parent.creatorType,
        displayName: parent.creatorDisplayName,
        teamId: parent.teamId,
      };
      const body: CreateRunRequest = {
        prompt: child.prompt,
        metadata: parent.metadata,
        config: { idle_timeout_minutes: parent.config.idle_timeout_minutes },
        agent_identity_uid: child.agentUid,
        parent_run_id: parent.runId,
      };
      const key = `${parent.runId}/${child.dispatchKey}`;
      const claim = claimFor(principal, 'dispatch-agent', key, { agent: child.agentUid, prompt: child.prompt });
      const origin: RunOrigin = { source: 'ORCHESTRATION', dispatchKey: child.dispatchKey };
      return create({ principal, body, claim, origin, startedBy: 'parent' });
    },
  };
}

/** The factory's FOREMAN, who takes the work dispatched to it; 400 naming its agents when it has none. */
async function foremanOf(manager: EntityManager, principal: RunPrincipal, factoryUid: string) {
  const factory = await findFactory(manager, factoryUid, principal.teamId);
  if (!factory) throw notFound(`No factory ${factoryUid}.`);
  const agents = await listFactoryAgents(manager, principal.teamId, factory.uid);
  const foreman = agents.find((a) => a.agentType === 'FOREMAN');
  if (foreman) return foreman;
  // 400 naming it, as the wire contract fixes it.
  throw invalid(
    `Factory "${factory.name}" (${factory.uid}) has no FOREMAN agent to take the work; ${
      agents.length
        ? `its agents are ${agents.map((a) => `${a.name} (${a.agentType})`).join(', ')}`
        : 'it has no agents'
    }. Make one of them, or a new agent, its foreman (\`agent_type: "FOREMAN"\`, \`factory_uid: "${factory.uid}"\`).`,
  );
}

/** How `runsCreated` counts a run: a factory agent's run made through the API counts as `factory`. */
function createdOrigin(origin: RunOrigin, executor: ComposedRun['executor']): RunCreatedOrigin {
  if (origin.source === 'SCHEDULED_AGENT') return 'schedule';
  if (origin.source === 'ORCHESTRATION') return 'orchestration';
  return executor?.factoryUid ? 'factory' : 'api';
}
