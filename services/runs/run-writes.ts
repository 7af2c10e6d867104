import type { ObjectStore } from '../../infra/object-store/object-store';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiError, notFound } from '../../core/api-error';
import type { Config } from '../../core/config';
import { isUuid } from '../../core/ids';
import type { Logger } from '../../core/logger';
import { rateLimitRejections } from '../../core/metrics';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import type { BlobStore } from '../../db/blob-store';
import { findIdempotencyRecord, storeIdempotencyResponse } from '../../db/idempotency-records';
import { isAwaitingWorkflowStart, markWorkflowStarted } from '../../db/run-creation';
import { findRun } from '../../db/run-reads';
import { lockRun } from '../../db/run-store';
import { liveWorkerIds } from '../../db/worker-leases';
import { RUN_WORKFLOW_TYPE, workspaceQueueFor, type AgentRunWorkflow } from '../../workflows/run-contract';
import { teamRunsPerHourLimit } from '../rate-limits';
import {
  asReplay,
  claimIdempotencyKey,
  claimMatches,
  requestHash,
  type IdempotencyClaim,
  type StoredResponse,
} from './idempotency';
import type { RunPrincipal } from './run-executor';
import { runWorkflowOptions } from './run-workflow-options';
import { createRunTransitions } from './run-transitions';
import type { SecretsKeyring } from '../../core/secrets-keyring';

export interface RunServiceDeps {
  config: Config;
  dataSource: DataSource;
  temporal: Client;
  /** Encrypts the MCP credentials a run is created with (`core/secrets.ts`). */
  secretsKeyring: SecretsKeyring;
  /** Where the bytes of a run's attachments go: the object store (`objectBlobStore`). */
  blobs: BlobStore;
  /** The object store of runs' files: a fork's manifest is written there. */
  objectStore: ObjectStore;
  logger: Logger;
}

/**
 * What every write of the run service shares: the team's hourly count, idempotency, the
 * record-then-call-Temporal step, the checks that lock a run or a worker, and the run's state
 * transitions.
 */
export function createRunWrites({
  config,
  dataSource,
  temporal,
  logger,
}: Pick<RunServiceDeps, 'config' | 'dataSource' | 'temporal' | 'logger'>) {
  const runsPerHour = teamRunsPerHourLimit(config, dataSource, logger);
  const transitions = createRunTransitions({ dataSource, logger });

  /**
   * Counts a run against its team's TEAM_MAX_RUNS_PER_HOUR, or refuses it (429, nothing
   * recorded): every run, the ones a factory agent dispatches included (its foreman is told in
   * the tool's result and goes on).
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
    return record?.response && claimMatches(claim, record.requestHash) ? asReplay(record.response) : undefined;
  };
  /** The claim of `key` for `body`; `formerBodies`: the same request as hashed under older secrets keys. */
  const claimFor = (
    principal: RunPrincipal,
    scope: string,
    key: string | undefined,
    body: unknown,
    formerBodies: unknown[] = [],
  ): IdempotencyClaim | undefined =>
    key
      ? {
          principalUid: principal.uid,
          scope,
          key,
          hash: requestHash(body),
          formerHashes: formerBodies.map(requestHash),
        }
      : undefined;

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
    runsPerHour,
    transitions,
    countTeamRun,
    withinDeadline,
    withIdempotency,
    storedResponseOf,
    claimFor,
    recordThenCall,
    assertWorkerLive,
    ensureWorkflowStarted,
    lockTeamRun,
  };
}

export type RunWrites = ReturnType<typeof createRunWrites>;
