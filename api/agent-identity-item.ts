import type { AgentIdentity } from '../db/agent-identity-reads';
import type { McpServerConfig } from '../core/run-types';
import { redactMcpServers } from '../core/secrets';

/**
 * `AgentResponse` as the official clients read it; MCP credentials are write-only ("***"). The
 * harness is the stored one, `{type: "oz"}` when none; `base_harness`, the older field, is its type.
 */
export function toAgentIdentityItem(identity: AgentIdentity) {
  const harness = { ...identity.harness, type: identity.harness?.type ?? ('oz' as const) };
  return {
    uid: identity.uid,
    name: identity.name,
    description: identity.description,
    prompt: identity.prompt,
    agent_type: identity.agentType,
    factory_uid: identity.factoryUid,
    environment_id: identity.environmentId,
    base_model: identity.baseModel,
    mcp_servers: identity.mcpServers ? redactMcpServers(identity.mcpServers as Record<string, McpServerConfig>) : null,
    skills: identity.skills,
    worker_host: identity.workerHost,
    on_behalf_of_enabled: identity.onBehalfOfEnabled,
    harness,
    base_harness: harness.type,
    harness_auth_secrets: identity.harnessAuthSecrets,
    ...(identity.approval ? { approval: identity.approval } : {}),
    delivery: identity.delivery,
    available: true,
    default_runner_uid: '',
    memory: { attached_stores: [], auto_memory: { enabled: false } },
    secrets: [],
    created_at: identity.createdAt.toISOString(),
    updated_at: identity.updatedAt.toISOString(),
  };
}
