import type { ScheduleDescription } from '@temporalio/client';
import { redactMcpServers } from '../../core/secrets';
import type { Schedule } from '../../db/schedule-reads';

/** `ScheduledAgentItem` as the official clients define it. */
export interface ScheduledAgentItem {
  id: string;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  prompt: string;
  created_at: string;
  updated_at: string;
  agent_config: Schedule['agentConfig'];
  agent_uid?: string;
  metadata?: Record<string, string>;
  created_by: { uid: string; display_name: string; type: string };
  updated_by: { uid: string; display_name: string; type: string };
  scope: { type: 'Team'; uid: string };
  history: { last_ran?: string; next_run?: string };
  last_spawn_error?: string;
}

/** The schedule as every endpoint shows it: MCP credentials as `"***"`; timing and state from Temporal. */
export function toScheduleItem(schedule: Schedule, temporal: ScheduleDescription | undefined): ScheduledAgentItem {
  const { mcp_servers: mcpServers, ...config } = schedule.agentConfig;
  const item: ScheduledAgentItem = {
    id: schedule.scheduleId,
    name: schedule.name,
    cron_schedule: schedule.cronSchedule,
    enabled: temporal !== undefined && !temporal.state.paused,
    prompt: schedule.prompt,
    created_at: schedule.createdAt.toISOString(),
    updated_at: schedule.updatedAt.toISOString(),
    agent_config: { ...config, ...(mcpServers ? { mcp_servers: redactMcpServers(mcpServers) } : {}) },
    created_by: schedule.creator,
    updated_by: schedule.updater,
    scope: { type: 'Team', uid: schedule.teamId },
    history: {},
  };
  if (schedule.agentUid) item.agent_uid = schedule.agentUid;
  if (schedule.metadata) item.metadata = schedule.metadata;
  if (schedule.lastSpawnError) item.last_spawn_error = schedule.lastSpawnError;
  const lastRan = temporal?.info.recentActions.at(-1)?.takenAt;
  if (lastRan) item.history.last_ran = lastRan.toISOString();
  const nextRun = temporal?.state.paused ? undefined : temporal?.info.nextActionTimes[0];
  if (nextRun) item.history.next_run = nextRun.toISOString();
  return item;
}
