import type { EntityManager } from 'typeorm';
import { invalid, notFound } from '../../core/api-error';
import { gatesAnything, mergeApprovalPolicies, type ApprovalPolicy } from '../../core/approval-policy';
import type { Config } from '../../core/config';
import { adhocTicket, ticketMetadata, type TicketRef } from '../../core/factory-tickets';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { CLI_HARNESSES } from '../../core/harnesses';
import { encryptMcpServers } from '../../core/secrets';
import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import type { AgentIdentity } from '../../db/agent-identity-reads';
import { findEnvironment } from '../../db/environment-reads';
import { findFactory, type Factory } from '../../db/factory-reads';
import type { Run } from '../../db/rows/run';
import { resolveConversation, resolveParent } from './create-request';
import { checkRunHarness } from './harness-request';
import { withDelivery } from './delivery-request';
import { newRun, withFactoryDefaults, withIdentityDefaults, type RunOrigin } from './new-run';
import { resolveCreator, resolveExecutor, type RunPrincipal } from './run-executor';
import { honouredConfig } from './run-request-fields';
import type { RunServiceDeps, RunWrites } from './run-writes';
import { forkConfig, type ForkPlan } from './fork-run';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/** A ticket dispatch's ticket (an adhoc one when `ref` is absent) and its URL. */
export interface TicketRequest {
  ref?: TicketRef;
  url?: string;
}

/** A new run as its creation resolved it: the row, who executes it and its harness. */
export interface ComposedRun {
  run: Run;
  executor: AgentIdentity | null;
  harness: string;
}

/**
 * The row of a new run, resolved inside its creation's transaction: who executes it and who it
 * is for, its configuration (the run's own, then its agent's, then its factory's), its
 * conversation and parent; and the checks of what it resolved to (its environment, its worker,
 * its harness), which refuse it before anything is recorded.
 */
export async function composeRun(
  tx: EntityManager,
  { config, secretsKeyring }: Pick<RunServiceDeps, 'config' | 'secretsKeyring'>,
  { assertWorkerLive }: Pick<RunWrites, 'assertWorkerLive'>,
  creation: {
    principal: RunPrincipal;
    body: CreateRunRequest;
    origin: RunOrigin;
    ticket?: TicketRequest;
    runId: string;
    skill: string | undefined;
    /** A fork: the source's configuration under the request's own fields. */
    fork?: ForkPlan;
  },
): Promise<ComposedRun> {
  const { principal, body, runId, skill, origin } = creation;
  const executor = await resolveExecutor(tx, principal, body.agent_identity_uid);
  const creator = await resolveCreator(tx, principal, executor, body.on_behalf_of);
  const requested = honouredConfig(body.config);
  const factory = executor?.factoryUid ? await findFactory(tx, executor.factoryUid, principal.teamId) : null;
  const configured = creation.fork
    ? forkConfig(creation.fork.source.config, givenConfig(secretsKeyring, requested))
    : resolvedConfig(config, secretsKeyring, { requested, skill, executor, factory });
  const environment = configured.environment_id
    ? await findEnvironment(tx, configured.environment_id, principal.teamId)
    : null;
  if (configured.environment_id && !environment) {
    throw notFound(`\`config.environment_id\`: no environment ${configured.environment_id} in your team.`);
  }
  const withPolicy = withApprovalPolicy(configured, [
    creation.fork?.source.config.approval,
    executor?.approval,
    environment?.config.approval,
  ]);
  const resolved = await withDelivery(tx, principal.teamId, withPolicy, { executor, environment });
  if (resolved.worker_host) await assertWorkerLive(tx, resolved.worker_host);
  await checkRunHarness(tx, principal.teamId, { requested, resolved, executor, factory });
  const asker = origin.source === 'ORCHESTRATION' ? 'dispatch_agent' : 'parent_run_id';
  const run = newRun(
    creator,
    executor,
    { ...body, metadata: ticketStamped(body, creation.ticket, runId) },
    resolved,
    origin,
    {
      runId,
      skill,
      conversationId: await resolveConversation(tx, principal, body.conversation_id),
      parentRunId: await resolveParent(tx, principal, body.parent_run_id, config.orchestration, asker),
    },
  );
  return { run, executor, harness: resolved.harness?.type ?? 'oz' };
}

/** The fields a request's config gives, as a run holds them (MCP credentials encrypted). */
function givenConfig(
  secretsKeyring: SecretsKeyring,
  requested: ReturnType<typeof honouredConfig>,
): Partial<ResolvedAgentConfig> | undefined {
  if (!requested) return undefined;
  return {
    ...(requested as Partial<ResolvedAgentConfig>),
    ...(requested.mcp_servers ? { mcp_servers: encryptMcpServers(requested.mcp_servers, secretsKeyring) } : {}),
  };
}

/** The run's own config wins; its agent identity fills what it leaves out, then its factory. */
function resolvedConfig(
  config: Config,
  secretsKeyring: SecretsKeyring,
  from: {
    requested: ReturnType<typeof honouredConfig>;
    skill: string | undefined;
    executor: AgentIdentity | null;
    factory: Factory | null;
  },
): ResolvedAgentConfig {
  const { requested, skill, executor, factory } = from;
  const own: ResolvedAgentConfig = {
    ...requested,
    model_id: requested?.model_id ?? executor?.baseModel ?? config.models.defaultModel,
    idle_timeout_minutes: requested?.idle_timeout_minutes ?? config.idleTimeoutMinutes,
    ...(skill ? { skill_spec: skill } : {}),
    // Write-only: stored encrypted, shown as "***" (run-item.ts), decrypted only by the worker.
    ...(requested?.mcp_servers ? { mcp_servers: encryptMcpServers(requested.mcp_servers, secretsKeyring) } : {}),
  };
  return withFactoryDefaults(withIdentityDefaults(own, executor), factory);
}

/**
 * The run's `approval` policy: its own merged with its fork source's, its agent identity's and
 * its environment's, the stricter winning (every glob, the shortest timeout). The `oz` agent and
 * the CLIs whose own tool calls the service can gate (Claude Code) take one; another harness
 * with a policy is refused, naming it.
 */
function withApprovalPolicy(
  resolved: ResolvedAgentConfig,
  others: (ApprovalPolicy | null | undefined)[],
): ResolvedAgentConfig {
  const { approval: own, ...rest } = resolved;
  const approval = mergeApprovalPolicies(own, ...others);
  const harness = resolved.harness?.type ?? 'oz';
  if (approval && gatesAnything(approval) && harness !== 'oz' && !CLI_HARNESSES[harness].approvals) {
    throw invalid(
      `\`config.approval\`: the ${harness} harness (${CLI_HARNESSES[harness].title}) cannot be gated by this service (its CLI decides its own calls inside the sandbox); approvals hold for the \`oz\` and \`claude\` harnesses only. Drop \`approval\` (from the run, its agent identity or its environment) or use \`oz\` or \`claude\`.`,
    );
  }
  return approval ? { ...rest, approval } : rest;
}

/** The metadata of a run for a ticket: the run's own, stamped with the ticket. */
function ticketStamped(
  body: CreateRunRequest,
  ticket: TicketRequest | undefined,
  runId: string,
): Record<string, string> | undefined {
  return ticket ? { ...body.metadata, ...ticketMetadata(ticket.ref ?? adhocTicket(runId), ticket.url) } : body.metadata;
}
