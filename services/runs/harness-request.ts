import type { EntityManager } from 'typeorm';
import { invalid } from '../../core/api-error';
import { CLI_HARNESSES, isCliHarness, type HarnessSecretField } from '../../core/harnesses';
import { HARNESS_SECRET_KINDS, type ManagedSecretKind } from '../../core/managed-secrets';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { findManagedSecret } from '../../db/managed-secrets';

const SECRET_FIELD_HARNESS: Record<HarnessSecretField, 'claude' | 'codex'> = {
  claude_auth_secret_name: 'claude',
  codex_auth_secret_name: 'codex',
};

/**
 * The harness of a run (or of an agent, a schedule) checked before anything is stored: a
 * reasoning level the CLI knows, and `harness_auth_secrets` that name a secret of the caller's
 * team, of a kind its harness takes, for the harness the run uses. `at` is where the fields sit
 * in the request (`config.` for runs, `agent_config.` for schedules, `` for agents).
 */
export async function checkHarnessRequest(
  manager: EntityManager,
  teamId: string,
  config: Pick<ResolvedAgentConfig, 'harness' | 'harness_auth_secrets'>,
  at = 'config.',
): Promise<void> {
  const type = config.harness?.type ?? 'oz';
  const level = config.harness?.reasoning_level;
  if (isCliHarness(type) && level) {
    const levels = CLI_HARNESSES[type].reasoningLevels;
    if (!levels) {
      throw invalid(
        `\`${at}harness.reasoning_level\`: ${CLI_HARNESSES[type].title} has no reasoning level to set; leave it out (Codex CLI takes one).`,
      );
    }
    if (!levels.includes(level)) {
      throw invalid(
        `\`${at}harness.reasoning_level\`: ${CLI_HARNESSES[type].title} takes ${levels.join(', ')}, not ${JSON.stringify(level)}.`,
      );
    }
  }
  for (const [field, name] of Object.entries(config.harness_auth_secrets ?? {}) as [HarnessSecretField, string][]) {
    if (!name) continue;
    const path = `${at}harness_auth_secrets.${field}`;
    const owner = SECRET_FIELD_HARNESS[field];
    if (owner !== type) {
      throw invalid(
        `\`${path}\` applies only when \`${at}harness.type\` is "${owner}"; this ${at ? 'run' : 'agent'}'s harness is "${type}". Leave it out, or set the harness.`,
      );
    }
    const secret = await findManagedSecret(manager, teamId, name);
    if (!secret) {
      throw invalid(
        `\`${path}\`: your team has no secret named ${JSON.stringify(name)}. Store it first with \`POST /api/v1/agent/secrets\` (or \`agent-runs secrets set ${name}\`).`,
      );
    }
    const accepted = HARNESS_SECRET_KINDS[owner];
    if (!accepted.includes(secret.kind as ManagedSecretKind)) {
      throw invalid(
        `\`${path}\`: the secret ${JSON.stringify(name)} is of kind ${secret.kind}; ${CLI_HARNESSES[owner].title} takes ${accepted.join(' or ')}.`,
      );
    }
  }
}
