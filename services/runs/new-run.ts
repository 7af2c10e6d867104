/**
 * How a new run is put together from who asks, who executes it and what it asks for: shared by
 * the API (create, factory dispatch, schedule firings) and the worker (runs a foreman dispatches).
 */
import type { AgentIdentity } from '../../db/agent-identity-reads';
import type { Run, RunScheduleRef } from '../../db/rows/run';
import type { Factory } from '../../db/factory-reads';
import { newSessionId } from '../../core/ids';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { harnessWithDefaults } from './harness-request';

/** Who a run is recorded as created by. */
export interface RunCreator {
  uid: string;
  type: 'user' | 'service_account';
  displayName: string;
  teamId: string;
}

/** Where a run comes from: the API, a schedule's firing, or a parent run that dispatched it. */
export type RunOrigin =
  | { source: 'API' }
  | { source: 'SCHEDULED_AGENT'; schedule: RunScheduleRef }
  | { source: 'ORCHESTRATION'; dispatchKey: string };

/** What the agent is told when neither its run nor its identity gives a base prompt. */
export const DEFAULT_BASE_PROMPT =
  'You are a careful software engineering agent. Work in the workspace with the tools you have, verify what you change, and finish with a short summary of what you did.';

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

/**
 * The identity's defaults under the run's own config: the run's values win, MCP servers by name;
 * its harness and harness secrets as `harnessWithDefaults` resolves them (`oz` stored as none).
 */
export function withIdentityDefaults(config: ResolvedAgentConfig, identity: AgentIdentity | null): ResolvedAgentConfig {
  const own: ResolvedAgentConfig = { ...config };
  delete own.harness;
  delete own.harness_auth_secrets;
  const harness = harnessWithDefaults(config, identity);
  if (!identity) return { ...own, ...harness };
  const skills = [...new Set([...identity.skills, ...(config.skills ?? [])])];
  const mcpServers = { ...(identity.mcpServers as ResolvedAgentConfig['mcp_servers']), ...config.mcp_servers };
  return {
    ...own,
    name: config.name ?? identity.name,
    ...(config.base_prompt === undefined && identity.prompt ? { base_prompt: identity.prompt } : {}),
    ...(config.environment_id === undefined && identity.environmentId
      ? { environment_id: identity.environmentId }
      : {}),
    ...(config.worker_host === undefined && identity.workerHost && identity.workerHost !== 'warp'
      ? { worker_host: identity.workerHost }
      : {}),
    ...(skills.length ? { skills } : {}),
    ...(Object.keys(mcpServers).length ? { mcp_servers: mcpServers } : {}),
    ...harness,
  };
}

/**
 * A factory agent's run works in the factory's environment (unless its run or identity names
 * one) and is told the factory's instructions after its own prompt.
 */
export function withFactoryDefaults(config: ResolvedAgentConfig, factory: Factory | null): ResolvedAgentConfig {
  if (!factory) return config;
  const instructions = factory.instructions?.trim();
  return {
    ...config,
    ...(config.environment_id === undefined && factory.environmentId ? { environment_id: factory.environmentId } : {}),
    ...(instructions
      ? {
          base_prompt: `${config.base_prompt ?? DEFAULT_BASE_PROMPT}\n\nYou are an agent of the factory "${factory.name}". Its instructions:\n${instructions}`,
        }
      : {}),
  };
}

/** The row of a run just accepted: QUEUED in its first turn. */
export function newRun(
  creator: RunCreator,
  executor: AgentIdentity | null,
  request: { prompt?: string; title?: string; metadata?: Record<string, string> },
  resolved: ResolvedAgentConfig,
  origin: RunOrigin,
  ids: { runId: string; skill: string | undefined; conversationId: string; parentRunId: string | null },
): Run {
  const prompt = request.prompt ?? '';
  const now = new Date();
  return {
    runId: ids.runId,
    teamId: creator.teamId,
    creatorUid: creator.uid,
    creatorType: creator.type,
    creatorDisplayName: creator.displayName,
    executorUid: executor?.uid ?? null,
    executorDisplayName: executor?.name ?? null,
    title: request.title?.trim() ? request.title : autoTitle(prompt, ids.skill),
    prompt,
    state: 'QUEUED',
    turn: 1,
    config: resolved,
    name: resolved.name ?? null,
    modelId: resolved.model_id,
    environmentId: resolved.environment_id ?? null,
    skillSpec: ids.skill ?? null,
    source: origin.source,
    schedule: origin.source === 'SCHEDULED_AGENT' ? origin.schedule : null,
    metadata: request.metadata ?? {},
    conversationId: ids.conversationId,
    parentRunId: ids.parentRunId,
    // The insert takes the true root from the parent's row (recordNewRun); this is its parent or itself until read back.
    rootRunId: ids.parentRunId ?? ids.runId,
    factoryUid: executor?.factoryUid ?? null,
    dispatchKey: origin.source === 'ORCHESTRATION' ? origin.dispatchKey : null,
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
}
