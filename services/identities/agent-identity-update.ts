import type { AgentIdentityFields } from '../../db/agent-identity-reads';
import type { McpServerConfig } from '../../core/run-types';
import { encryptMcpServersKeepingRedacted } from '../../core/secrets';
import { invalid } from '../../core/api-error';
import type { AgentIdentityUpdate } from '../../core/schemas/agent-identity-schemas';
import { namedSecrets, normalHarness } from '../runs/run-request-fields';
import { mergeApprovalPolicies } from '../../core/approval-policy';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/** A field as an update gives it: absent or null keeps the value, an empty string clears it. */
function text(given: string | null | undefined, current: string | null): string | null {
  if (given === undefined || given === null) return current;
  return given === '' ? null : given;
}

/**
 * The harness after `update`: `harness` replaces it (`oz`, the default, is stored as none); else
 * `base_harness`, the older field, names a type ("" or `oz` clears it; the current harness's own
 * type keeps its model and reasoning level); neither sent keeps it.
 */
function harnessAfter(update: AgentIdentityUpdate, current: AgentIdentityFields['harness']) {
  if (update.harness !== undefined && update.harness !== null) return normalHarness(update.harness) ?? null;
  const base = update.base_harness;
  if (base === undefined || base === null) return current;
  if (base === current?.type) return current;
  return normalHarness({ type: base || 'oz' }) ?? null;
}

/**
 * The fields of an identity after `update` (a create is an update of the defaults): what is not
 * sent keeps its value. MCP credentials are encrypted; one sent back as the mask a response shows
 * (`"***"`) keeps the stored value, so that a GET's answer can be PUT back unchanged.
 */
export function applyIdentityUpdate(
  current: AgentIdentityFields,
  update: AgentIdentityUpdate,
  secretsKeyring: SecretsKeyring,
): AgentIdentityFields {
  let mcpServers = current.mcpServers;
  if (update.mcp_servers !== undefined && update.mcp_servers !== null) {
    const given = update.mcp_servers as Record<string, McpServerConfig>;
    if (Object.keys(given).length === 0) mcpServers = null;
    else {
      const stored = (current.mcpServers ?? {}) as Record<string, McpServerConfig>;
      const result = encryptMcpServersKeepingRedacted(given, stored, secretsKeyring);
      if ('unknownMask' in result) {
        throw invalid(
          `\`mcp_servers.${result.unknownMask}\` is "***", the mask responses show, but no value is stored there to keep; send the real value.`,
        );
      }
      mcpServers = result.servers;
    }
  }
  return {
    name: update.name ?? current.name,
    description: text(update.description, current.description),
    prompt: text(update.prompt, current.prompt),
    agentType: update.agent_type ?? current.agentType,
    factoryUid: text(update.factory_uid, current.factoryUid),
    environmentId: text(update.environment_id, current.environmentId),
    baseModel: text(update.base_model, current.baseModel),
    mcpServers,
    skills: update.skills ?? current.skills,
    workerHost: text(update.worker_host, current.workerHost),
    onBehalfOfEnabled: update.on_behalf_of_enabled ?? current.onBehalfOfEnabled,
    harness: harnessAfter(update, current.harness),
    // Sent, it replaces the stored names (`{}` clears them); not sent, they are kept.
    harnessAuthSecrets:
      update.harness_auth_secrets === undefined || update.harness_auth_secrets === null
        ? current.harnessAuthSecrets
        : (namedSecrets(update.harness_auth_secrets) ?? null),
    // Sent, it replaces the stored policy (`{}` clears it); not sent, it is kept.
    approval:
      update.approval === undefined || update.approval === null
        ? current.approval
        : (mergeApprovalPolicies(update.approval) ?? null),
    // Sent, it replaces the stored settings (`null` or `{}` clears them); not sent, they are kept.
    delivery: update.delivery === undefined ? current.delivery : update.delivery?.pull_request ? update.delivery : null,
  };
}
