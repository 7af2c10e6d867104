import type { AuditOutcome, AuditRecord } from '../../core/audit/audit-event';
import { decryptMcpServers } from '../../core/secrets';
import type { RunScheduleRef } from '../../db/rows/run';
import type { Schedule } from '../../db/schedule-reads';
import type { RunPrincipal } from '../runs/run-service';
import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/** What a firing of a schedule creates: its run's request, its record of the schedule, its principal. */

/** The run a firing of `schedule` asks for: what `POST /agent/runs` would be sent. */
export function scheduledRunRequest(schedule: Schedule, secretsKeyring: SecretsKeyring): CreateRunRequest {
  const { mcp_servers: mcpServers, ...config } = schedule.agentConfig;
  const request: CreateRunRequest = {
    config: { ...config, ...(mcpServers ? { mcp_servers: decryptMcpServers(mcpServers, secretsKeyring) } : {}) },
  };
  if (schedule.prompt) request.prompt = schedule.prompt;
  if (schedule.metadata) request.metadata = schedule.metadata;
  if (schedule.agentUid) request.agent_identity_uid = schedule.agentUid;
  return request;
}

/** What a scheduled run records about its schedule. */
export function runScheduleRef(schedule: Schedule): RunScheduleRef {
  return { schedule_id: schedule.scheduleId, schedule_name: schedule.name, cron_schedule: schedule.cronSchedule };
}

/** The principal a firing creates its run for: the schedule's creator, in the schedule's team. */
export function schedulePrincipal(schedule: Schedule): RunPrincipal {
  return {
    uid: schedule.creator.uid,
    type: schedule.creator.type,
    displayName: schedule.creator.display_name,
    teamId: schedule.teamId,
  };
}

/** The audit record of a firing: the scheduler created a run for the schedule's creator, or could not. */
export function scheduledRunEvent(
  schedule: Schedule,
  outcome: AuditOutcome,
  runId?: string,
  errorCode?: string,
): AuditRecord {
  return {
    teamId: schedule.teamId,
    action: 'run.create',
    outcome,
    actor: { type: 'service', uid: 'scheduler' },
    resource: { type: 'run', ...(runId ? { id: runId } : {}) },
    details: {
      source: 'SCHEDULED_AGENT',
      schedule_id: schedule.scheduleId,
      on_behalf_of: schedule.creator.uid,
      ...(errorCode ? { error: errorCode } : {}),
    },
  };
}
