import type { EntityManager } from 'typeorm';
import { ApiError, notFound } from '../../core/api-error';
import { isCliHarness, type CliHarnessType } from '../../core/harnesses';
import { isUuid } from '../../core/ids';
import type { ResolvedAgentConfig } from '../../core/run-types';
import type { ForkRunRequest } from '../../core/schemas/checkpoint-schemas';
import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import { MAX_TITLE_CHARS } from '../../core/schemas/run-fields';
import { findCheckpoint, latestCheckpoint, type CheckpointRow } from '../../db/checkpoint-reads';
import type { Run } from '../../db/rows/run';
import { findRun } from '../../db/run-reads';
import type { ObjectStore } from '../../infra/object-store/object-store';
import { writeForkManifest, type ForkManifest } from '../checkpoints/fork-manifest';
import type { RunPrincipal } from './run-executor';

/** The fork's first message when the request gives none. */
export const FORK_CONTINUE_PROMPT = 'Continue from where the conversation left off.';

/** What a fork is made from: its source, the checkpoint and that checkpoint's files as the fork's own manifest. */
export interface ForkPlan {
  source: Run;
  checkpoint: CheckpointRow;
  manifest: ForkManifest;
}

/**
 * The source and checkpoint a fork asks for, checked: another team's run or checkpoint is 404, a
 * run without a checkpoint yet 409. Stores the fork's manifest (content-addressed: a fork that is
 * then refused leaves an object nothing references, which the store's collection removes).
 */
export async function planFork(
  manager: EntityManager,
  store: ObjectStore,
  principal: RunPrincipal,
  sourceRunId: string,
  checkpointId: string | undefined,
): Promise<ForkPlan> {
  const source = isUuid(sourceRunId) ? await findRun(manager, sourceRunId, principal.teamId) : null;
  if (!source) throw notFound(`No run ${sourceRunId}.`);
  const checkpoint = checkpointId
    ? await findCheckpoint(manager, principal.teamId, source.runId, checkpointId)
    : await latestCheckpoint(manager, source.runId);
  if (!checkpoint) {
    if (checkpointId)
      throw notFound(
        `Run ${source.runId} has no checkpoint ${checkpointId}; list them with GET /api/v1/agent/runs/${source.runId}/checkpoints.`,
      );
    throw new ApiError(
      'conflict',
      `Run ${source.runId} has no checkpoint yet: its workspace is recorded once it is provisioned. Fork it once it has started working.`,
      { retryable: true },
    );
  }
  return { source, checkpoint, manifest: await writeForkManifest(manager, store, checkpoint) };
}

/**
 * The create request a fork amounts to: the source's agent and metadata, the given prompt (or
 * "continue"), the given title (or "Fork of …"); its configuration is the source's with the
 * request's fields over it (`forkConfig`).
 */
export function forkRequest(source: Run, body: ForkRunRequest): CreateRunRequest {
  const title = body.title ?? `Fork of ${source.title}`;
  return {
    prompt: body.prompt?.trim() ? body.prompt : FORK_CONTINUE_PROMPT,
    title: title.length > MAX_TITLE_CHARS ? `${title.slice(0, MAX_TITLE_CHARS - 1)}…` : title,
    ...(body.config ? { config: body.config } : {}),
    metadata: source.metadata,
    ...(source.executorUid ? { agent_identity_uid: source.executorUid } : {}),
  };
}

/**
 * The CLI harness whose session the fork continues: the fork's, when the source ran the same CLI
 * (a CLI resumes only its own sessions); undefined otherwise (the fork's CLI starts a new one).
 */
export function continuedCliHarness(
  source: ResolvedAgentConfig,
  fork: ResolvedAgentConfig,
): CliHarnessType | undefined {
  const type = fork.harness?.type;
  return isCliHarness(type) && source.harness?.type === type ? type : undefined;
}

/** The fork's configuration: the source's as resolved (its MCP credentials still encrypted), the fork's own fields over it. */
export function forkConfig(
  source: ResolvedAgentConfig,
  own: Partial<ResolvedAgentConfig> | undefined,
): ResolvedAgentConfig {
  return { ...source, ...own };
}
