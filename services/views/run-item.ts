import type { Config } from '../../core/config';
import { isTerminal } from '../../core/run-state';
import { expiresIn, signedQuery, type UrlSigner, type UrlSigningKeys } from '../../core/signed-urls';
import type { RunArtifact } from '../../db/artifact-reads';
import type { Run } from '../../db/rows/run';
import type { RunApproval } from '../../db/run-approvals';
import { toArtifactItem } from './artifact-views';
import { maskSecrets, redactRunConfig, runSecretValues } from '../../core/run-secrets';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/** `RunItem` as the wire contract and the official clients define it. */
export interface RunItem {
  run_id: string;
  task_id: string;
  title: string;
  prompt: string;
  state: Run['state'];
  created_at: string;
  updated_at: string;
  started_at?: string;
  session_id?: string;
  session_link?: string;
  conversation_id: string;
  agent_config: Run['config'];
  agent_skill?: NonNullable<Run['agentSkill']>;
  status_message?: NonNullable<Run['statusMessage']>;
  creator: { uid: string; display_name: string; type: Run['creatorType'] };
  executor?: { uid: string; display_name: string; type: 'service_account' };
  source: Run['source'];
  /** Only on runs a schedule created. */
  schedule?: NonNullable<Run['schedule']>;
  metadata: Record<string, string>;
  run_time?: string;
  request_usage: { total_tokens: number; inference_cost_usd?: number };
  artifacts: ReturnType<typeof toArtifactItem>[];
  parent_run_id?: string;
  root_run_id: string;
  /** The factory whose agent executes the run. */
  factory_uid?: string;
  finished_at?: string;
  /** WORKER_ID of the worker that holds (or last held) the run's workspace. */
  worker_id?: string;
  /** The image the run's environment named, and the digest it resolved to when the run was first provisioned. */
  image_reference?: string;
  forked_from?: { run_id: string; checkpoint_id: string };
  image_digest?: string;
  is_run_type_cancellable: boolean;
  /** While BLOCKED: the call that waits for a person. */
  pending_approval?: PendingApprovalItem;
}

/** `pending_approval` of a BLOCKED run: what waits, for how long. */
export interface PendingApprovalItem {
  approval_id: string;
  kind: RunApproval['kind'];
  tool?: string;
  arguments?: Record<string, unknown>;
  question?: string;
  requested_at: string;
  expires_at: string;
}

function toPendingApprovalItem(approval: RunApproval, secrets: readonly string[]): PendingApprovalItem {
  return {
    approval_id: approval.approvalId,
    kind: approval.kind,
    ...(approval.kind === 'tool_call'
      ? { tool: approval.tool, arguments: maskSecrets(approval.arguments, secrets) }
      : { question: maskSecrets(approval.question ?? '', secrets) }),
    requested_at: approval.requestedAt.toISOString(),
    expires_at: approval.expiresAt.toISOString(),
  };
}

/** ISO 8601 duration with millisecond precision, e.g. PT2M30.5S. */
export function isoDuration(ms: number): string {
  const totalSeconds = Math.max(0, ms) / 1000;
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = Math.round((totalSeconds % 60) * 1000) / 1000;
  return `PT${hours ? `${hours}H` : ''}${minutes ? `${minutes}M` : ''}${seconds || (!hours && !minutes) ? `${seconds}S` : ''}`;
}

/** What signs the `session_link`s of runs; `signingKeys`: urlSigningKeys(the secrets keyring). */
export function sessionLinkSigner(
  config: Pick<Config, 'publicUrl' | 'sessionLinkTtlSeconds'>,
  signingKeys: UrlSigningKeys,
): UrlSigner {
  return { keys: signingKeys, publicUrl: config.publicUrl, ttlSeconds: config.sessionLinkTtlSeconds };
}

/**
 * A run's transcript page, `{PUBLIC_URL}/sessions/{session_id}?expires=…&signature=…`: readable
 * without a key until SESSION_LINK_TTL_SECONDS after `now`, and only with its signature (the
 * session id alone opens nothing).
 */
export function sessionLink(signer: UrlSigner, sessionId: string, now: Date): string {
  const expires = expiresIn(signer.ttlSeconds, now.getTime());
  return `${signer.publicUrl}/sessions/${sessionId}?${signedQuery(signer.keys, 'sessions', sessionId, expires)}`;
}

/**
 * The run as every endpoint shows it: MCP credentials as `"***"`, never in clear (not even echoed
 * in a status); `artifacts` are the run's (db/artifacts.ts `artifactsOfRuns`); `session_link`
 * signed afresh, working for the signer's TTL from `now`.
 */
export function toRunItem(
  run: Run,
  sessionLinks: UrlSigner,
  secretsKeyring: SecretsKeyring,
  artifacts: RunArtifact[] = [],
  now: Date = new Date(),
  pendingApproval?: RunApproval,
): RunItem {
  const started = run.startedAt !== null;
  const item: RunItem = {
    run_id: run.runId,
    task_id: run.runId,
    root_run_id: run.rootRunId,
    title: run.title,
    prompt: run.prompt,
    state: run.state,
    created_at: run.createdAt.toISOString(),
    updated_at: run.updatedAt.toISOString(),
    conversation_id: run.conversationId,
    agent_config: redactRunConfig(run.config),
    creator: { uid: run.creatorUid, display_name: run.creatorDisplayName, type: run.creatorType },
    ...(run.executorUid
      ? { executor: { uid: run.executorUid, display_name: run.executorDisplayName ?? '', type: 'service_account' } }
      : {}),
    source: run.source,
    metadata: run.metadata,
    request_usage: { total_tokens: Number(run.totalTokens) },
    artifacts: artifacts.map(toArtifactItem),
    is_run_type_cancellable: !isTerminal(run.state),
  };
  if (run.startedAt) {
    item.started_at = run.startedAt.toISOString();
    const end = isTerminal(run.state) && run.endedAt ? run.endedAt : now;
    item.run_time = isoDuration(end.getTime() - run.startedAt.getTime());
  }
  // The transcript page exists from the start; the link is advertised once the agent started.
  if (started || run.state === 'SUCCEEDED') {
    item.session_id = run.sessionId;
    item.session_link = sessionLink(sessionLinks, run.sessionId, now);
  }
  if (run.agentSkill) item.agent_skill = run.agentSkill;
  if (run.statusMessage)
    item.status_message = maskSecrets(run.statusMessage, runSecretValues(run.config, secretsKeyring));
  if (run.inferenceCostUsd !== null) item.request_usage.inference_cost_usd = Number(run.inferenceCostUsd);
  if (run.parentRunId) item.parent_run_id = run.parentRunId;
  if (run.factoryUid) item.factory_uid = run.factoryUid;
  if (isTerminal(run.state) && run.endedAt) item.finished_at = run.endedAt.toISOString();
  if (run.schedule) item.schedule = run.schedule;
  if (run.workerId) item.worker_id = run.workerId;
  if (run.image) {
    item.image_reference = run.image.reference;
    item.image_digest = run.image.digest;
  }
  if (run.forkedFrom) item.forked_from = { run_id: run.forkedFrom.runId, checkpoint_id: run.forkedFrom.checkpointId };
  if (run.state === 'BLOCKED' && pendingApproval) {
    item.pending_approval = toPendingApprovalItem(pendingApproval, runSecretValues(run.config, secretsKeyring));
  }
  return item;
}
