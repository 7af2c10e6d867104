import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import type { DataSource, EntityManager } from 'typeorm';
import type { Config } from '../core/config';
import { newSessionId, newUuidV7, isUuid } from '../core/ids';
import { isTerminal, type RunState } from '../core/run-state';
import type { ResolvedAgentConfig } from '../core/run-types';
import { encryptMcpServers } from '../core/secrets';
import type { AuthenticatedPrincipal } from '../db/api-keys';
import type { Run } from '../db/entities/run';
import { findEnvironment } from '../db/environments';
import { appendRunEvent } from '../db/run-events';
import { findRun } from '../db/run-queries';
import { applyCancellation, lockRun, lockRunCreation, recordCancelRequest, reopenRun } from '../db/run-store';
import type { agentRunWorkflow } from '../workflows/run-workflow';
import {
  followupSignal,
  RUN_WORKFLOW_TYPE,
  runWorkflowId,
  searchAttributes,
  type RunWorkflowInput,
} from '../workflows/run-contract';
import { ApiError, invalid, notFound } from './api-error';
import { assertSkillOwnerAllowed } from './git-owners';
import { claimIdempotencyKey, requestHash, storeIdempotentResponse, type StoredResponse } from './idempotency';
import { idempotencyView } from './run-secrets';
import type { CreateRunRequest, FollowupRequest } from './schemas/run-schemas';

export interface RunServiceDeps {
  config: Config;
  dataSource: DataSource;
  temporal: Client;
  /** Encrypts the MCP credentials a run is created with (`core/secrets.ts`). */
  secretsKey: Buffer;
}

const TITLE_CHARS = 80;

/** A title from the prompt's first line when the caller gives none. */
export function autoTitle(prompt: string, skill?: string): string {
  const line =
    prompt
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.replace(/\s+/g, ' ')
      .trim() ?? '';
  if (!line) return skill ? `Run skill ${skill}` : 'Untitled run';
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1).trimEnd()}…` : line;
}

/** Creates, steers and cancels runs: PostgreSQL and Temporal change together or not at all. */
export function createRunService({ config, dataSource, temporal, secretsKey }: RunServiceDeps) {
  /**
   * Every call to Temporal has a deadline: a frozen or partitioned Temporal makes the request
   * answer 503 (and its transaction roll back) instead of hanging with a connection held.
   */
  const withinDeadline = <T>(call: () => Promise<T>): Promise<T> =>
    temporal.withDeadline(Date.now() + config.temporal.rpcTimeoutMs, call);

  const workflowInput = (runId: string): RunWorkflowInput => ({
    runId,
    settings: {
      heartbeatTimeoutSeconds: config.heartbeatTimeoutSeconds,
      workspaceScheduleToStartSeconds: config.workspace.scheduleToStartSeconds,
      modelRetry: config.models.retry,
      workerLeaseSeconds: config.worker.leaseSeconds,
    },
  });

  const workflowExtras = (
    run: Pick<Run, 'name' | 'modelId' | 'creatorUid' | 'source' | 'environmentId' | 'title'>,
    state: RunState,
  ) => {
    const attributes: SearchAttributePair[] = [
      { key: searchAttributes.state, value: state },
      { key: searchAttributes.model, value: run.modelId },
      { key: searchAttributes.creator, value: run.creatorUid },
      { key: searchAttributes.source, value: run.source },
      { key: searchAttributes.environment, value: run.environmentId ?? 'empty-environment' },
    ];
    if (run.name) attributes.push({ key: searchAttributes.name, value: run.name });
    return { typedSearchAttributes: attributes, memo: { title: run.title } };
  };

  async function withIdempotency(
    principal: AuthenticatedPrincipal,
    scope: string,
    key: string | undefined,
    body: unknown,
    work: (tx: EntityManager) => Promise<StoredResponse>,
  ): Promise<StoredResponse> {
    return dataSource.transaction(async (tx) => {
      const claim = key ? { principalUid: principal.uid, scope, key, hash: requestHash(body) } : undefined;
      if (claim) {
        const replay = await claimIdempotencyKey(tx, claim);
        if (replay) return replay;
      }
      const response = await work(tx);
      if (claim) await storeIdempotentResponse(tx, claim, response);
      return response;
    });
  }

  async function lockTeamRun(tx: EntityManager, principal: AuthenticatedPrincipal, runId: string) {
    if (!isUuid(runId)) throw notFound(`No run ${runId}.`);
    const run = await findRun(tx, runId, principal.teamId);
    if (!run) throw notFound(`No run ${runId}.`);
    const locked = await lockRun(tx, runId);
    return { run, locked: locked! };
  }

  return {
    async createRun(
      principal: AuthenticatedPrincipal,
      body: CreateRunRequest,
      idempotencyKey: string | undefined,
    ): Promise<StoredResponse> {
      if (body.agent_identity_uid !== undefined && body.agent_identity_uid !== principal.uid) {
        throw new ApiError(
          'not_authorized',
          principal.type === 'user'
            ? "A personal key cannot act as an agent identity; use that identity's agent key."
            : `This agent key belongs to ${principal.uid} and cannot act as ${body.agent_identity_uid}.`,
        );
      }
      if (body.config?.computer_use_enabled) {
        throw new ApiError(
          'feature_not_available',
          'Computer use is not available on this service; omit `config.computer_use_enabled`.',
        );
      }
      const skill = body.skill ?? body.config?.skill_spec;
      if (skill) {
        assertSkillOwnerAllowed(config.workspace.gitAllowedOwners, skill, body.skill ? 'skill' : 'config.skill_spec');
      }
      assertWithinOperatorLimits(config, body.config);
      const hashed = idempotencyView(body, secretsKey);
      return withIdempotency(principal, 'create-run', idempotencyKey, hashed, async (tx) => {
        const resolved: ResolvedAgentConfig = {
          ...body.config,
          model_id: body.config?.model_id ?? config.models.defaultModel,
          idle_timeout_minutes: body.config?.idle_timeout_minutes ?? config.idleTimeoutMinutes,
          ...(skill ? { skill_spec: skill } : {}),
          // Write-only: stored encrypted, shown as "***" (run-item.ts), decrypted only by the worker.
          ...(body.config?.mcp_servers ? { mcp_servers: encryptMcpServers(body.config.mcp_servers, secretsKey) } : {}),
        };
        if (resolved.environment_id && !(await findEnvironment(tx, resolved.environment_id, principal.teamId))) {
          throw notFound(`\`config.environment_id\`: no environment ${resolved.environment_id} in your team.`);
        }
        const conversationId = await resolveConversation(tx, principal, body.conversation_id);
        const parentRunId = await resolveParent(tx, principal, body.parent_run_id);
        const runId = newUuidV7();
        const prompt = body.prompt ?? '';
        const title = body.title?.trim() ? body.title : autoTitle(prompt, skill);
        const now = new Date();
        const run: Run = {
          runId,
          teamId: principal.teamId,
          creatorUid: principal.uid,
          creatorType: principal.type,
          creatorDisplayName: principal.displayName,
          title,
          prompt,
          state: 'QUEUED',
          turn: 1,
          config: resolved,
          name: resolved.name ?? null,
          modelId: resolved.model_id,
          environmentId: resolved.environment_id ?? null,
          skillSpec: skill ?? null,
          source: 'API',
          metadata: body.metadata ?? {},
          conversationId,
          parentRunId,
          sessionId: newSessionId(),
          statusMessage: null,
          agentSkill: null,
          totalTokens: '0',
          inferenceCostUsd: null,
          cancelRequestedAt: null,
          cancelRequestedBy: null,
          startedAt: null,
          endedAt: null,
          createdAt: now,
          updatedAt: now,
        };
        // Held until commit: the workflow's first activity waits on it, so it never sees a half-made run.
        await lockRunCreation(tx, runId);
        await tx.getRepository<Run>('Run').insert(run);
        await appendRunEvent(tx, {
          runId,
          eventKey: 'prompt',
          kind: 'prompt',
          turn: 1,
          payload: { text: prompt, base_prompt: resolved.base_prompt },
        });
        await appendRunEvent(tx, {
          runId,
          eventKey: 'state-t1-QUEUED',
          kind: 'state',
          turn: 1,
          payload: { state: 'QUEUED' },
        });
        await withinDeadline(() =>
          temporal.workflow.start<typeof agentRunWorkflow>(RUN_WORKFLOW_TYPE, {
            taskQueue: config.temporal.taskQueue,
            workflowId: runWorkflowId(runId),
            args: [workflowInput(runId)],
            ...workflowExtras(run, 'QUEUED'),
          }),
        );
        return {
          status: 201,
          body: { run_id: runId, task_id: runId, state: 'QUEUED' },
          headers: { Location: `/api/v1/agent/runs/${runId}` },
        };
      });
    },

    async sendFollowup(
      principal: AuthenticatedPrincipal,
      runId: string,
      body: FollowupRequest,
      idempotencyKey: string | undefined,
    ): Promise<StoredResponse> {
      if (!isUuid(runId)) throw notFound(`No run ${runId}.`);
      return withIdempotency(principal, `followup:${runId}`, idempotencyKey, body, async (tx) => {
        const { run, locked } = await lockTeamRun(tx, principal, runId);
        const [{ seq }] = (await tx.query(`SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM followups WHERE run_id = $1`, [
          runId,
        ])) as [{ seq: number }];
        await tx.query(
          `INSERT INTO followups (id, run_id, seq, message, mode, creator_uid, created_at) VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp())`,
          [newUuidV7(), runId, seq, body.message, body.mode ?? 'normal', principal.uid],
        );
        let state: RunState = locked.state;
        if (isTerminal(locked.state)) {
          await reopenRun(tx, runId, locked.turn);
          state = 'QUEUED';
        }
        // Sent while the row lock is held: the workflow reads follow-ups under the same lock,
        // so it sees this one as soon as the transaction commits, and never a rolled-back one.
        await withinDeadline(() =>
          temporal.workflow.signalWithStart<typeof agentRunWorkflow, [{ seq: number }]>(RUN_WORKFLOW_TYPE, {
            taskQueue: config.temporal.taskQueue,
            workflowId: runWorkflowId(runId),
            args: [workflowInput(runId)],
            signal: followupSignal,
            signalArgs: [{ seq }],
            ...workflowExtras(run, state),
          }),
        );
        return { status: 200, body: { run_id: runId, state }, headers: {} };
      });
    },

    async cancelRun(principal: AuthenticatedPrincipal, runId: string): Promise<void> {
      await dataSource.transaction(async (tx) => {
        const { locked } = await lockTeamRun(tx, principal, runId);
        if (isTerminal(locked.state)) {
          throw new ApiError(
            'operation_not_supported',
            `Run ${runId} is already ${locked.state}; only QUEUED or INPROGRESS runs can be cancelled.`,
          );
        }
        await recordCancelRequest(tx, runId, `${principal.displayName} (${principal.uid})`);
        try {
          await withinDeadline(() => temporal.workflow.getHandle(runWorkflowId(runId)).cancel());
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
          // No workflow is running for this run (an operator terminated it): record the end here.
          await applyCancellation(tx, runId);
        }
      });
    },
  };
}

async function resolveConversation(
  tx: EntityManager,
  principal: AuthenticatedPrincipal,
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
  principal: AuthenticatedPrincipal,
  parentRunId?: string,
): Promise<string | null> {
  if (parentRunId === undefined) return null;
  if (!isUuid(parentRunId) || !(await findRun(tx, parentRunId, principal.teamId))) {
    throw invalid(`\`parent_run_id\`: no run ${parentRunId} in your team.`);
  }
  return parentRunId;
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
