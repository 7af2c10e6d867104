import { ATTACHMENTS_DIR } from '../../core/attachments';
import { invalid, notFound } from '../../core/api-error';
import { adhocTicket, ticketMetadata, type TicketRef } from '../../core/factory-tickets';
import { newUuidV7 } from '../../core/ids';
import { observeRunCreated, type RunCreatedOrigin } from '../../core/metrics';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { idempotencyView } from '../../core/run-secrets';
import { encryptMcpServers } from '../../core/secrets';
import type { CreateRunRequest, FactoryDispatchRequest } from '../../core/schemas/run-schemas';
import { listFactoryAgents } from '../../db/agent-identities';
import { recordRunAttachments } from '../../db/attachments';
import { findEnvironment } from '../../db/environments';
import { findFactory } from '../../db/factories';
import { markWorkflowStarted, recordNewRun, withdrawUnstartedRun } from '../../db/run-creation';
import { lockRunCreation } from '../../db/run-store';
import { RUN_WORKFLOW_TYPE, type AgentRunWorkflow } from '../../workflows/run-contract';
import { checkCreateRequest, decodeAttachments, resolveConversation, resolveParent } from './create-request';
import type { StoredResponse } from './idempotency';
import { newRun, withFactoryDefaults, withIdentityDefaults, type RunOrigin } from './new-run';
import { resolveCreator, resolveExecutor, type RunPrincipal } from './run-executor';
import { honouredConfig } from './run-request-fields';
import { checkRunHarness } from './harness-request';
import { openDispatchedTask } from '../factories/factory-tasks';
import type { RunServiceDeps, RunWrites } from './run-writes';
import { runWorkflowOptions } from './run-workflow-options';

/** Creating runs: `POST /agent/runs`, schedule firings, and dispatches to a factory's foreman. */
export function createRunCreation(deps: RunServiceDeps, writes: RunWrites) {
  const { config, temporal, secretsKey, blobs } = deps;
  const {
    runsPerHour,
    countTeamRun,
    withIdempotency,
    storedResponseOf,
    claimFor,
    recordThenCall,
    assertWorkerLive,
    ensureWorkflowStarted,
  } = writes;
  const dataSource = deps.dataSource;

  const creation = {
    /**
     * `POST /agent/runs`, and every firing of a schedule (`origin`: its source and schedule), so
     * that a scheduled run is made exactly like any other.
     */
    async createRun(
      principal: RunPrincipal,
      body: CreateRunRequest,
      idempotencyKey: string | undefined,
      origin: RunOrigin = { source: 'API' },
      /** Work for a ticket (`POST /factory/{uid}/runs`): stamped with it, and given its factory task. */
      ticket?: TicketRequest,
    ): Promise<StoredResponse> {
      const skill = checkCreateRequest(config, body);
      const view = idempotencyView(body, secretsKey);
      const claim = claimFor(principal, 'create-run', idempotencyKey, ticket ? { ...view, ticket } : view);
      const runId = newUuidV7();
      const attachments = decodeAttachments(body.attachments);
      let created: RunCreatedOrigin | undefined;
      let resolvedHarness = 'oz';
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
              await checkRunHarness(tx, principal.teamId, { requested, resolved, executor, factory });
              created = createdOrigin(origin, executor);
              resolvedHarness = resolved.harness?.type ?? 'oz';
              const metadata = ticket ? { ...body.metadata, ...stampedTicket(ticket, runId) } : body.metadata;
              const run = newRun(creator, executor, { ...body, metadata }, resolved, origin, {
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
              // In the same transaction: a run for a ticket never exists without its task.
              if (ticket) await openDispatchedTask(tx, run);
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
          observeRunCreated(created, resolvedHarness);
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
      return creation.createRun(
        principal,
        { ...body, agent_identity_uid: foreman.uid },
        idempotencyKey,
        { source: 'API' },
        ticket,
      );
    },
  };
  return creation;
}

/** A ticket dispatch's ticket (an adhoc one when `ref` is absent) and its URL. */
export interface TicketRequest {
  ref?: TicketRef;
  url?: string;
}

function stampedTicket(ticket: TicketRequest, runId: string): Record<string, string> {
  return ticketMetadata(ticket.ref ?? adhocTicket(runId), ticket.url);
}

/** How `runsCreated` counts a run: a factory agent's run made through the API counts as `factory`. */
function createdOrigin(origin: RunOrigin, executor: { factoryUid: string | null } | null): RunCreatedOrigin {
  if (origin.source === 'SCHEDULED_AGENT') return 'schedule';
  if (origin.source === 'ORCHESTRATION') return 'orchestration';
  return executor?.factoryUid ? 'factory' : 'api';
}
