import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { DataSource, EntityManager } from 'typeorm';
import { ATTACHMENTS_DIR, uniqueFileNames } from '../../core/attachments';
import type { Config } from '../../core/config';
import type { Logger } from '../../core/logger';
import { newUuidV7, isUuid } from '../../core/ids';
import { observeRunCreated, observeRunEnded, rateLimitRejections, type RunCreatedOrigin } from '../../core/metrics';
import { newRun, withFactoryDefaults, withIdentityDefaults, type RunOrigin } from './new-run';
import { isTerminal } from '../../core/run-state';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { isKnownModelProvider, modelProviderOf, MODEL_PROVIDERS } from '../../core/model-providers';
import { encryptMcpServers } from '../../core/secrets';
import type { AuthenticatedPrincipal } from '../../db/api-keys';
import { recordRunAttachments, type FileContent } from '../../db/attachments';
import type { BlobStore } from '../../db/blob-store';
import { findEnvironment } from '../../db/environments';
import { recordFollowup, withdrawFollowup, type RecordedFollowup } from '../../db/followups';
import {
  isAwaitingWorkflowStart,
  markWorkflowStarted,
  recordNewRun,
  withdrawUnstartedRun,
} from '../../db/run-creation';
import { liveWorkerIds } from '../../db/worker-leases';
import { findRun } from '../../db/run-queries';
import { listFactoryAgents } from '../../db/agent-identities';
import { deleteIdempotencyRecord, findIdempotencyRecord, storeIdempotencyResponse } from '../../db/idempotency-records';
import { findFactory } from '../../db/factories';
import { countChildren, runDepth } from '../../db/run-lineage';
import { applyCancellation, lockRun, lockRunCreation, recordCancelRequest } from '../../db/run-store';
import {
  followupSignal,
  RUN_WORKFLOW_TYPE,
  runWorkflowId,
  workspaceQueueFor,
  type AgentRunWorkflow,
} from '../../workflows/run-contract';
import { ApiError, invalid, notFound } from '../../core/api-error';
import { resolveCreator, resolveExecutor, type RunPrincipal } from './run-executor';
import { assertRunFieldsSupported, honouredConfig, ORCHESTRATE_MODE_WHY } from './run-request-fields';
import { assertSkillOwnerAllowed } from '../skills/git-owners';
import { runWorkflowOptions } from './run-workflow-options';
import { asReplay, claimIdempotencyKey, requestHash, type IdempotencyClaim, type StoredResponse } from './idempotency';
import { teamRunsPerHourLimit } from '../rate-limits';
import { idempotencyView } from '../../core/run-secrets';
import type { CreateRunRequest, FactoryDispatchRequest, FollowupRequest } from '../../core/schemas/run-schemas';

export interface RunServiceDeps {
  config: Config;
  dataSource: DataSource;
  temporal: Client;
  /** Encrypts the MCP credentials a run is created with (`core/secrets.ts`). */
  secretsKey: Buffer;
  /** Where the bytes of a run's attachments go. */
  blobs: BlobStore;
  logger: Logger;
}

/** Creates, steers and cancels runs: PostgreSQL and Temporal change together or not at all. */
export function createRunService({ config, dataSource, temporal, secretsKey, blobs, logger }: RunServiceDeps) {
  const runsPerHour = teamRunsPerHourLimit(config, dataSource, logger);

  /**
   * Counts a run against its team's TEAM_MAX_RUNS_PER_HOUR, or refuses it (429, nothing
   * recorded). Runs a factory agent dispatches are not counted: refusing them would break a
   * foreman mid-run; its root run was counted.
   */
  async function countTeamRun(teamId: string): Promise<boolean> {
    if (!runsPerHour) return false;
    const state = await runsPerHour.take(teamId);
    if (!state) return false;
    if (!state.allowed) {
      rateLimitRejections.inc({ limit: 'runs_per_hour' });
      const at = new Date(Date.now() + state.resetSeconds * 1000).toISOString();
      throw new ApiError(
        'rate_limited',
        `Your team created ${state.limit} runs within the hour, the most TEAM_MAX_RUNS_PER_HOUR allows; no run was created. The next one can be created in ${state.resetSeconds} seconds (at ${at}).`,
        { headers: { 'Retry-After': String(state.resetSeconds) } },
      );
    }
    return true;
  }

  /**
   * Every call to Temporal has a deadline: a frozen or partitioned Temporal makes the request
   * answer 503 (and its transaction roll back) instead of hanging with a connection held.
   */
  const withinDeadline = <T>(call: () => Promise<T>): Promise<T> =>
    temporal.withDeadline(Date.now() + config.temporal.rpcTimeoutMs, call);

  async function withIdempotency(
    principal: RunPrincipal,
    claim: IdempotencyClaim | undefined,
    work: (tx: EntityManager) => Promise<StoredResponse>,
  ): Promise<StoredResponse> {
    return dataSource.transaction(async (tx) => {
      if (claim) {
        const replay = await claimIdempotencyKey(tx, claim);
        if (replay) return replay;
      }
      const response = await work(tx);
      if (claim) await storeIdempotencyResponse(tx, claim, response);
      return response;
    });
  }

  /** The response a finished request with this key and body gave, if there is one. */
  const storedResponseOf = async (claim: IdempotencyClaim): Promise<StoredResponse | undefined> => {
    const record = await findIdempotencyRecord(dataSource.manager, claim);
    return record?.response && record.requestHash === claim.hash ? asReplay(record.response) : undefined;
  };
  const claimFor = (principal: RunPrincipal, scope: string, key: string | undefined, body: unknown) =>
    key ? { principalUid: principal.uid, scope, key, hash: requestHash(body) } : undefined;

  /**
   * Runs the Temporal call that `recordAndCall` fires (once its transaction holds the locks the
   * workflow waits on) alongside the rest of that transaction: the transaction commits without
   * waiting for Temporal, so no connection is held while Temporal answers, and the request
   * costs about the longer of the two, not their sum. When the call fails, `withdraw` takes
   * back what the transaction recorded and says whether it could; when it could not, the
   * workflow already has it, so the call reached Temporal after all.
   */
  async function recordThenCall(
    recordAndCall: (fire: (call: () => Promise<unknown>) => void) => Promise<StoredResponse>,
    withdraw: (tx: EntityManager) => Promise<boolean>,
  ): Promise<StoredResponse> {
    let inFlight: Promise<unknown> | undefined;
    const fire = (call: () => Promise<unknown>) => {
      inFlight = withinDeadline(call);
      inFlight.catch(() => undefined);
    };
    const response = await recordAndCall(fire);
    if (!inFlight) return response; // an idempotent replay: nothing new was recorded
    try {
      await inFlight;
    } catch (err) {
      if (await dataSource.transaction(withdraw)) throw err;
    }
    return response;
  }

  /** A run pinned to a worker needs that worker up now; otherwise it would wait for nothing. */
  async function assertWorkerLive(tx: EntityManager, workerHost: string): Promise<void> {
    const live = await liveWorkerIds(tx, workspaceQueueFor(config.temporal.taskQueue, ''));
    if (live.includes(workerHost)) return;
    // A valid request the service cannot take in its present state: a conflict, not a malformed request.
    // Which workers do run is the operator's to know, not every team's: none are named.
    throw new ApiError(
      'conflict',
      `\`config.worker_host\`: no worker "${workerHost}" is running. Omit it (or send "warp") to run on any worker.`,
      { retryable: false },
    );
  }

  /** Starts the workflow of a run recorded without one (its create was cut off), once; a no-op otherwise. */
  async function ensureWorkflowStarted(runId: string): Promise<void> {
    if (!(await isAwaitingWorkflowStart(dataSource.manager, runId))) return;
    const run = await findRun(dataSource.manager, runId);
    if (!run) return;
    try {
      await withinDeadline(() =>
        temporal.workflow.start<AgentRunWorkflow>(RUN_WORKFLOW_TYPE, runWorkflowOptions(config, run, 'QUEUED')),
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    await markWorkflowStarted(dataSource.manager, runId);
  }

  async function lockTeamRun(tx: EntityManager, principal: AuthenticatedPrincipal, runId: string) {
    if (!isUuid(runId)) throw notFound(`No run ${runId}.`);
    const run = await findRun(tx, runId, principal.teamId);
    if (!run) throw notFound(`No run ${runId}.`);
    const locked = await lockRun(tx, runId);
    return { run, locked: locked! };
  }

  return {
    /**
     * Checks what a create request asks for before anything is recorded (a schedule checks its
     * run request here too, when it is created or changed). Returns the skill the run uses.
     */
    checkCreateRequest(principal: RunPrincipal, body: CreateRunRequest): string | undefined {
      return checkCreateRequest(config, body);
    },

    /**
     * `POST /agent/runs`, and every firing of a schedule (`origin`: its source and schedule), so
     * that a scheduled run is made exactly like any other.
     */
    async createRun(
      principal: RunPrincipal,
      body: CreateRunRequest,
      idempotencyKey: string | undefined,
      origin: RunOrigin = { source: 'API' },
    ): Promise<StoredResponse> {
      const skill = checkCreateRequest(config, body);
      const claim = claimFor(principal, 'create-run', idempotencyKey, idempotencyView(body, secretsKey));
      const runId = newUuidV7();
      const attachments = decodeAttachments(body.attachments);
      let created: RunCreatedOrigin | undefined;
      // Counted before the transaction: the counter takes a connection of the same pool, which a
      // burst of transactions waiting on it would exhaust. Given back below when no run is made
      // after all (a bad reference, an idempotent replay); a replay is answered even at the limit.
      let counted: boolean;
      try {
        counted = await countTeamRun(principal.teamId);
      } catch (err) {
        const replay = claim && (await storedResponseOf(claim));
        if (replay) return replay;
        throw err;
      }
      try {
        const response = await recordThenCall(
          (fire) =>
            withIdempotency(principal, claim, async (tx) => {
              const executor = await resolveExecutor(tx, principal, body.agent_identity_uid);
              const creator = await resolveCreator(tx, principal, executor, body.on_behalf_of);
              const requested = honouredConfig(body.config);
              // The run's own config wins; its agent identity fills what it leaves out.
              const factory = executor?.factoryUid
                ? await findFactory(tx, executor.factoryUid, principal.teamId)
                : null;
              const resolved: ResolvedAgentConfig = withFactoryDefaults(
                withIdentityDefaults(
                  {
                    ...requested,
                    model_id: requested?.model_id ?? executor?.baseModel ?? config.models.defaultModel,
                    idle_timeout_minutes: requested?.idle_timeout_minutes ?? config.idleTimeoutMinutes,
                    ...(skill ? { skill_spec: skill } : {}),
                    // Write-only: stored encrypted, shown as "***" (run-item.ts), decrypted only by the worker.
                    ...(requested?.mcp_servers
                      ? { mcp_servers: encryptMcpServers(requested.mcp_servers, secretsKey) }
                      : {}),
                  },
                  executor,
                ),
                factory,
              );
              if (resolved.environment_id && !(await findEnvironment(tx, resolved.environment_id, principal.teamId))) {
                throw notFound(`\`config.environment_id\`: no environment ${resolved.environment_id} in your team.`);
              }
              if (resolved.worker_host) await assertWorkerLive(tx, resolved.worker_host);
              created = createdOrigin(origin, executor);
              const run = newRun(creator, executor, body, resolved, origin, {
                runId,
                skill,
                conversationId: await resolveConversation(tx, principal, body.conversation_id),
                parentRunId: await resolveParent(tx, principal, body.parent_run_id, config.orchestration),
              });
              // Held until commit: the workflow's first activity waits on it, so it never sees a half-made run.
              await lockRunCreation(tx, runId);
              fire(() =>
                temporal.workflow.start<AgentRunWorkflow>(RUN_WORKFLOW_TYPE, runWorkflowOptions(config, run, 'QUEUED')),
              );
              await recordNewRun(
                tx,
                run,
                {
                  mode: body.mode ?? 'normal',
                  attachments: attachments.map((a) => ({
                    path: `${ATTACHMENTS_DIR}/${a.fileName}`,
                    mime_type: a.mimeType,
                    size_bytes: a.bytes.length,
                  })),
                },
                // Listed once its workflow is known to exist: a create cut off before its start never is.
                false,
              );
              await recordRunAttachments(tx, blobs, runId, attachments);
              return {
                status: 201,
                body: { run_id: runId, task_id: runId, state: 'QUEUED' },
                headers: { Location: `/api/v1/agent/runs/${runId}` },
              };
            }),
          (tx) => withdrawUnstartedRun(tx, runId),
        );
        if (created) {
          await markWorkflowStarted(dataSource.manager, runId);
          observeRunCreated(created);
        } else {
          if (counted) await runsPerHour?.giveBack(principal.teamId);
          // A replay of a create whose API was cut off before the run's workflow started: start it now.
          const replayedRunId = (response.body as { run_id?: string }).run_id;
          if (replayedRunId) await ensureWorkflowStarted(replayedRunId);
        }
        return response;
      } catch (err) {
        // No run was made after all: it does not count.
        if (counted) await runsPerHour?.giveBack(principal.teamId);
        throw err;
      }
    },

    /**
     * `POST /agent/factories/{uid}/runs`: a run of the factory's foreman, created exactly as
     * `POST /agent/runs` with the foreman's `agent_identity_uid` would be.
     */
    async dispatchToFactory(
      principal: RunPrincipal,
      factoryUid: string,
      body: FactoryDispatchRequest,
      idempotencyKey: string | undefined,
    ): Promise<StoredResponse> {
      const factory = await findFactory(dataSource.manager, factoryUid, principal.teamId);
      if (!factory) throw notFound(`No factory ${factoryUid}.`);
      const agents = await listFactoryAgents(dataSource.manager, principal.teamId, factory.uid);
      const foreman = agents.find((a) => a.agentType === 'FOREMAN');
      if (!foreman) {
        // 400 naming it, as the wire contract fixes it.
        throw invalid(
          `Factory "${factory.name}" (${factory.uid}) has no FOREMAN agent to take the work; ${
            agents.length
              ? `its agents are ${agents.map((a) => `${a.name} (${a.agentType})`).join(', ')}`
              : 'it has no agents'
          }. Make one of them, or a new agent, its foreman (\`agent_type: "FOREMAN"\`, \`factory_uid: "${factory.uid}"\`).`,
        );
      }
      return this.createRun(principal, { ...body, agent_identity_uid: foreman.uid }, idempotencyKey);
    },

    async sendFollowup(
      principal: AuthenticatedPrincipal,
      runId: string,
      body: FollowupRequest,
      idempotencyKey: string | undefined,
    ): Promise<StoredResponse> {
      if (!isUuid(runId)) throw notFound(`No run ${runId}.`);
      if (body.mode === 'orchestrate') {
        throw new ApiError(
          'feature_not_available',
          `\`mode\` "orchestrate" is not available here: ${ORCHESTRATE_MODE_WHY}`,
        );
      }
      const claim = claimFor(principal, `followup:${runId}`, idempotencyKey, body);
      let recorded: RecordedFollowup | undefined;
      return recordThenCall(
        (fire) =>
          withIdempotency(principal, claim, async (tx) => {
            const { run, locked } = await lockTeamRun(tx, principal, runId);
            recorded = await recordFollowup(
              tx,
              { runId, message: body.message, mode: body.mode ?? 'normal', creatorUid: principal.uid, locked },
              isTerminal(locked.state),
            );
            const { seq, state } = recorded;
            // The workflow reads follow-ups under the row lock held here, so it sees this one
            // once the transaction commits, and never a rolled-back one.
            fire(() =>
              temporal.workflow.signalWithStart<AgentRunWorkflow, [{ seq: number }]>(RUN_WORKFLOW_TYPE, {
                ...runWorkflowOptions(config, run, state),
                signal: followupSignal,
                signalArgs: [{ seq }],
              }),
            );
            return { status: 200, body: { run_id: runId, state }, headers: {} };
          }),
        async (tx) => {
          const withdrawn = await withdrawFollowup(tx, runId, recorded!);
          if (withdrawn && claim) await deleteIdempotencyRecord(tx, claim);
          return withdrawn;
        },
      );
    },

    /**
     * The request is recorded first (who asked, and the last follow-up it saw), then Temporal is
     * asked to cancel; the record stays when that fails, since the caller is told to retry and
     * a cancellation that did reach Temporal must still name who asked for it.
     */
    async cancelRun(principal: AuthenticatedPrincipal, runId: string): Promise<void> {
      const turn = await dataSource.transaction(async (tx) => {
        const { locked } = await lockTeamRun(tx, principal, runId);
        if (isTerminal(locked.state)) {
          // 400, as the wire contract fixes it for `operation_not_supported`.
          throw new ApiError(
            'operation_not_supported',
            `Run ${runId} is already ${locked.state}; only QUEUED or INPROGRESS runs can be cancelled.`,
          );
        }
        await recordCancelRequest(tx, runId, `${principal.displayName} (${principal.uid})`);
        return locked.turn;
      });
      try {
        await withinDeadline(() => temporal.workflow.getHandle(runWorkflowId(runId)).cancel());
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        // No workflow is running for this run (an operator terminated it): record the end here.
        // Only the turn the request was about: a follow-up may have reopened the run since.
        if (await dataSource.transaction((tx) => applyCancellation(tx, runId, turn))) {
          observeRunEnded('CANCELLED', undefined);
        }
      }
    },
  };
}

/** Who a run is created for: the caller's key, or the creator of the schedule that fires. */
export type { RunPrincipal } from './run-executor';

export type { RunOrigin } from './new-run';

/** How `runsCreated` counts a run: a factory agent's run made through the API counts as `factory`. */
function createdOrigin(origin: RunOrigin, executor: { factoryUid: string | null } | null): RunCreatedOrigin {
  if (origin.source === 'SCHEDULED_AGENT') return 'schedule';
  if (origin.source === 'ORCHESTRATION') return 'orchestration';
  return executor?.factoryUid ? 'factory' : 'api';
}

function checkCreateRequest(config: Config, body: CreateRunRequest): string | undefined {
  if (body.config?.computer_use_enabled) {
    throw new ApiError(
      'feature_not_available',
      'Computer use is not available on this service; omit `config.computer_use_enabled`.',
    );
  }
  assertRunFieldsSupported(body);
  const skill = body.skill ?? body.config?.skill_spec;
  if (skill) {
    assertSkillOwnerAllowed(config.workspace.gitAllowedOwners, skill, body.skill ? 'skill' : 'config.skill_spec');
  }
  for (const [index, extra] of (body.config?.skills ?? []).entries()) {
    assertSkillOwnerAllowed(config.workspace.gitAllowedOwners, extra, `config.skills.${index}`);
  }
  if (body.config?.model_id && !isKnownModelProvider(body.config.model_id)) {
    throw invalid(
      `\`config.model_id\`: this service has no provider "${modelProviderOf(body.config.model_id)}"; use ${MODEL_PROVIDERS.map((p) => `\`${p}/<model>\``).join(' or ')}.`,
    );
  }
  assertWithinOperatorLimits(config, body.config);
  return skill;
}

async function resolveConversation(
  tx: EntityManager,
  principal: RunPrincipal,
  conversationId?: string,
): Promise<string> {
  if (conversationId === undefined) return newUuidV7();
  const rows = (await tx.query(`SELECT 1 FROM runs WHERE conversation_id = $1 AND team_id = $2 LIMIT 1`, [
    conversationId,
    principal.teamId,
  ])) as unknown[];
  if (rows.length === 0) throw invalid(`\`conversation_id\`: no conversation ${conversationId} in your team.`);
  return conversationId;
}

async function resolveParent(
  tx: EntityManager,
  principal: RunPrincipal,
  parentRunId: string | undefined,
  limits: Config['orchestration'],
): Promise<string | null> {
  if (parentRunId === undefined) return null;
  if (!isUuid(parentRunId) || !(await findRun(tx, parentRunId, principal.teamId))) {
    throw invalid(`\`parent_run_id\`: no run ${parentRunId} in your team.`);
  }
  const depth = (await runDepth(tx, parentRunId)) + 1;
  if (depth > limits.maxDepth) {
    throw invalid(
      `\`parent_run_id\`: run ${parentRunId} is already ${depth - 1} level(s) below its root run; this service allows at most ${limits.maxDepth} (ORCHESTRATION_MAX_DEPTH).`,
    );
  }
  const children = await countChildren(tx, parentRunId);
  if (children >= limits.maxChildrenPerRun) {
    throw invalid(
      `\`parent_run_id\`: run ${parentRunId} already has ${children} child runs, the most one run may have (ORCHESTRATION_MAX_CHILDREN_PER_RUN).`,
    );
  }
  return parentRunId;
}

/** The request's attachments as stored: bytes decoded (validated as base64 by the schema), names sanitised and unique. */
function decodeAttachments(attachments: CreateRunRequest['attachments']): FileContent[] {
  if (!attachments?.length) return [];
  const names = uniqueFileNames(attachments.map((a) => a.file_name));
  return attachments.map((a, i) => ({
    fileName: names[i]!,
    mimeType: a.mime_type.toLowerCase(),
    bytes: Buffer.from(a.data, 'base64'),
  }));
}

/** The operator's limits are ceilings: a run may ask for less, never for more. */
function assertWithinOperatorLimits(config: Config, requested: CreateRunRequest['config']): void {
  const limits = [
    ['max_steps', requested?.max_steps, config.agent.maxSteps, 'AGENT_MAX_STEPS'],
    ['max_tokens', requested?.max_tokens, config.agent.maxTokens, 'AGENT_MAX_TOKENS'],
    [
      'idle_timeout_minutes',
      requested?.idle_timeout_minutes,
      config.maxIdleTimeoutMinutes,
      'AGENT_MAX_IDLE_TIMEOUT_MINUTES',
    ],
  ] as const;
  for (const [field, value, ceiling, variable] of limits) {
    if (value !== undefined && value > ceiling) {
      throw invalid(
        `\`config.${field}\` is ${value}, above this service's limit of ${ceiling} (${variable}); ask for at most ${ceiling}.`,
      );
    }
  }
}
