import type { EntityManager } from 'typeorm';
import { invalid } from '../../core/api-error';
import { CLI_HARNESSES, isCliHarness, type HarnessSecretField } from '../../core/harnesses';
import { HARNESS_SECRET_KINDS, type ManagedSecretKind } from '../../core/managed-secrets';
import type { ResolvedAgentConfig } from '../../core/run-types';
import type { AgentIdentity } from '../../db/agent-identity-reads';
import type { Factory } from '../../db/factory-reads';
import { findManagedSecret } from '../../db/managed-secret-reads';
import { assertForemanHarness } from '../factories/factory-membership';
import { namedSecrets, normalHarness } from './run-request-fields';

/** The harness each `harness_auth_secrets` field is for. */
export const SECRET_FIELD_HARNESS: Record<HarnessSecretField, 'claude' | 'codex'> = {
  claude_auth_secret_name: 'claude',
  codex_auth_secret_name: 'codex',
};

type HarnessFields = Pick<ResolvedAgentConfig, 'harness' | 'harness_auth_secrets'>;

/** Where the harness fields being checked are, for the messages. */
export interface HarnessFieldsScope {
  /** Where the fields sit in the request: `config.` (runs), `agent_config.` (schedules), `` (agents). */
  at: string;
  /** What they configure: `run`, `schedule`, `agent`. */
  subject: string;
  /**
   * Secret fields the request did not send but that apply all the same (an agent's stored
   * value): how the message names each, and what to do about one that does not fit.
   */
  taken?: Partial<Record<HarnessSecretField, { label: string; fix: string }>>;
}

/**
 * The harness of a run, a schedule or an agent checked before anything is stored: a reasoning
 * level the CLI knows, and `harness_auth_secrets` that name a secret of the caller's team, of a
 * kind its harness takes, for the harness it uses. One definition for all three.
 */
export async function checkHarnessRequest(
  manager: EntityManager,
  teamId: string,
  config: HarnessFields,
  scope: HarnessFieldsScope = { at: 'config.', subject: 'run' },
): Promise<void> {
  const { at, subject } = scope;
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
    const taken = scope.taken?.[field];
    const label = taken?.label ?? `\`${at}harness_auth_secrets.${field}\``;
    const owner = SECRET_FIELD_HARNESS[field];
    if (owner !== type) {
      throw invalid(
        `${label} applies only when \`${at}harness.type\` is "${owner}"; this ${subject}'s harness is "${type}". ${taken?.fix ?? 'Leave it out, or set the harness.'}`,
      );
    }
    const secret = await findManagedSecret(manager, teamId, name);
    if (!secret) {
      throw invalid(
        `${label}: your team has no secret named ${JSON.stringify(name)}. Store it first with \`POST /api/v1/agent/secrets\` (or \`agent-runs secrets set ${name}\`).`,
      );
    }
    const accepted = HARNESS_SECRET_KINDS[owner];
    if (!accepted.includes(secret.kind as ManagedSecretKind)) {
      throw invalid(
        `${label}: the secret ${JSON.stringify(name)} is of kind ${secret.kind}; ${CLI_HARNESSES[owner].title} takes ${accepted.join(' or ')}.`,
      );
    }
  }
}

/**
 * The harness fields of a run executed as `identity`: the run's own harness when it sends one
 * (`oz` included), else the identity's; the run's own secret names, then the identity's that are
 * for that harness (one for another harness no longer applies). `oz` is stored as no harness.
 */
export function harnessWithDefaults(
  own: HarnessFields,
  identity: Pick<AgentIdentity, 'harness' | 'harnessAuthSecrets'> | null,
): HarnessFields {
  const harness = normalHarness(own.harness ?? identity?.harness);
  const type = harness?.type ?? 'oz';
  const inherited = Object.entries(identity?.harnessAuthSecrets ?? {}).filter(
    ([field]) => SECRET_FIELD_HARNESS[field as HarnessSecretField] === type,
  );
  const secrets = namedSecrets({ ...Object.fromEntries(inherited), ...own.harness_auth_secrets });
  return { ...(harness ? { harness } : {}), ...(secrets ? { harness_auth_secrets: secrets } : {}) };
}

/**
 * The harness a run (or each run of a schedule) resolved to, checked as `checkHarnessRequest`
 * does, naming the agent where a value is its; and a factory's FOREMAN keeps this service's own
 * loop. `requested` is what the request sent, `resolved` the result of `harnessWithDefaults`.
 */
export async function checkRunHarness(
  manager: EntityManager,
  teamId: string,
  run: {
    requested: HarnessFields | undefined;
    resolved: HarnessFields;
    executor: AgentIdentity | null;
    factory: Pick<Factory, 'uid' | 'name'> | null;
  },
  scope: Pick<HarnessFieldsScope, 'at' | 'subject'> = { at: 'config.', subject: 'run' },
): Promise<void> {
  const { requested, resolved, executor } = run;
  const agent = executor ? `agent "${executor.name}" (${executor.uid})` : '';
  const taken: HarnessFieldsScope['taken'] = {};
  for (const field of Object.keys(resolved.harness_auth_secrets ?? {}) as HarnessSecretField[]) {
    if (!requested?.harness_auth_secrets?.[field]) {
      taken[field] = {
        label: `\`harness_auth_secrets.${field}\` of ${agent}, which this ${scope.subject} takes`,
        fix: `Set \`${scope.at}harness_auth_secrets\` for its harness.`,
      };
    }
  }
  await checkHarnessRequest(manager, teamId, resolved, { ...scope, taken });
  if (executor && run.factory) {
    const own = requested?.harness !== undefined;
    assertForemanHarness(
      { ...executor, factory: run.factory },
      resolved.harness?.type,
      own ? `\`${scope.at}harness.type\`` : `\`harness.type\` of agent ${executor.uid}`,
      own
        ? `Leave \`${scope.at}harness\` out: the foreman's own loop is its default.`
        : `Set it to \`{"type": "oz"}\` with \`PUT /api/v1/agent/identities/${executor.uid}\`.`,
    );
  }
}
