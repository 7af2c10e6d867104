import type { EntityManager } from 'typeorm';
import { invalid } from '../../core/api-error';
import { CLI_HARNESSES, isCliHarness, type HarnessSecretField } from '../../core/harnesses';
import type { AgentIdentityUpdate } from '../../core/schemas/agent-identity-schemas';
import type { AgentIdentityFields } from '../../db/agent-identity-reads';
import { checkHarnessRequest, type HarnessFieldsScope } from '../runs/harness-request';

const sent = (update: AgentIdentityUpdate, field: keyof AgentIdentityUpdate) =>
  update[field] !== undefined && update[field] !== null;

/**
 * The harness fields of an agent's create or update, checked on what the agent will be
 * (`fields`: its values with the update applied) before anything is written: `base_harness`
 * agrees with `harness`; a harness other than `oz` goes with an empty `base_model` (each names the
 * agent's default model, for a different loop); and the rules of a run's harness
 * (checkHarnessRequest). Secret names kept from before are checked again only when the request
 * sends a harness field, so that a secret deleted since does not block, say, a rename.
 */
export async function checkIdentityHarness(
  manager: EntityManager,
  teamId: string,
  update: AgentIdentityUpdate,
  fields: AgentIdentityFields,
): Promise<void> {
  const base = update.base_harness;
  if (sent(update, 'harness') && base) {
    const type = update.harness?.type ?? 'oz';
    if (base !== type) {
      throw invalid(
        `\`base_harness\` is "${base}" but \`harness.type\` is "${type}": \`base_harness\` is the older name of \`harness.type\`, and \`harness\` decides. Send one of them, or the same type in both.`,
      );
    }
  }
  const harnessField = sent(update, 'harness') ? 'harness.type' : sent(update, 'base_harness') ? 'base_harness' : '';
  const type = fields.harness?.type;
  if (isCliHarness(type) && fields.baseModel && (harnessField || sent(update, 'base_model'))) {
    const { title } = CLI_HARNESSES[type];
    throw invalid(
      harnessField
        ? `\`${harnessField}\`: ${title} ("${type}") takes its model from \`harness.model_id\`, and this agent has \`base_model\` "${fields.baseModel}", the model of this service's own loop (\`oz\`); an agent has one default model. Send \`base_model: ""\` with it to clear that, or keep the harness "oz".`
        : `\`base_model\`: this agent's harness is ${title} ("${type}"), which takes its model from \`harness.model_id\`; \`base_model\` is the model of this service's own loop (\`oz\`) and stays empty with another harness. Set \`harness.model_id\` instead, or send \`harness: {"type": "oz"}\` with it.`,
    );
  }
  if (!harnessField && !sent(update, 'harness_auth_secrets')) return;
  const taken: HarnessFieldsScope['taken'] = {};
  if (!sent(update, 'harness_auth_secrets')) {
    for (const field of Object.keys(fields.harnessAuthSecrets ?? {}) as HarnessSecretField[]) {
      taken[field] = {
        label: `\`harness_auth_secrets.${field}\` (kept: this request does not send \`harness_auth_secrets\`)`,
        fix: 'Send `harness_auth_secrets` with the secret for its harness, or `{}` to clear it.',
      };
    }
  }
  await checkHarnessRequest(
    manager,
    teamId,
    {
      ...(fields.harness ? { harness: fields.harness } : {}),
      ...(fields.harnessAuthSecrets ? { harness_auth_secrets: fields.harnessAuthSecrets } : {}),
    },
    { at: '', subject: 'agent', taken },
  );
}

/**
 * An agent's harness as the factory rules see it (a FOREMAN keeps `oz`): its type, the request
 * field a refusal names and what to do instead.
 */
export function foremanHarnessCheck(update: AgentIdentityUpdate, fields: AgentIdentityFields) {
  const type = fields.harness?.type;
  const ownField = sent(update, 'harness') ? 'harness.type' : sent(update, 'base_harness') ? 'base_harness' : '';
  if (ownField) {
    return {
      type,
      field: `\`${ownField}\``,
      fix: 'Leave `harness` out or send `{"type": "oz"}`; a CLI harness suits the factory\'s other agents.',
    };
  }
  return {
    type,
    field: sent(update, 'agent_type') ? '`agent_type`' : '`factory_uid`',
    fix: `This agent's harness is "${type}": send \`harness: {"type": "oz"}\` with it, or give it another \`agent_type\`.`,
  };
}
