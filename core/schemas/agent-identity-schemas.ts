import { AGENT_TYPES } from '../agent-types';
import { HARNESS_TYPES } from '../harnesses';
import { unavailableList, unavailableMap, unavailableString, unavailableChoice } from './not-available';
import { harnessAuthSecretsSchema } from './agent-config-schemas';
import { agentConfigSchema, harnessSchema, mcpServersSchema, MAX_PROMPT_CHARS, skillSpecSchema } from './run-schemas';
import { resourcePageQuery } from './resource-page-schemas';
import { nonBlankText } from './text';
import { z } from './zod';
import { approvalPolicySchema } from './approval-schemas';
import { deliverySchema } from './delivery-schemas';

/** `base_harness`: the older way to name `harness.type`; an empty string clears it in an update. */
const BASE_HARNESSES = ['', ...HARNESS_TYPES] as const;

/**
 * `POST`/`PUT /agent/identities` bodies. Fields the clients send that have no meaning here
 * (memory, secrets, runners, inference providers, credential strategies) are recognised so that
 * asking for them is a clear `feature_not_available`, and asking for nothing (null, empty) is fine.
 */
export const agentIdentityBodySchema = z
  .strictObject({
    name: nonBlankText(200),
    description: z.string().max(2000).nullish(),
    prompt: z.string().max(MAX_PROMPT_CHARS).nullish(),
    agent_type: z.enum(AGENT_TYPES).nullish(),
    factory_uid: z.string().min(1).max(128).nullish(),
    environment_id: agentConfigSchema.shape.environment_id.nullable(),
    base_model: agentConfigSchema.shape.model_id.nullable(),
    mcp_servers: mcpServersSchema.nullish(),
    skills: z.array(skillSpecSchema).max(50).nullish(),
    worker_host: z.string().max(255).trim().nullish(),
    on_behalf_of_enabled: z.boolean().nullish(),
    approval: approvalPolicySchema.nullish().openapi({
      description:
        "Calls of this agent's runs that wait for a person, merged with each run's own (the stricter wins); in an update, `{}` clears it.",
    }),
    delivery: deliverySchema.nullish().openapi({
      description:
        "What this agent's runs do with a turn's change, as a run's `config.delivery`: the run's own fields win one by one, then this agent's, then its environment's. In an update, `null` or `{}` clears it.",
    }),
    harness: harnessSchema.nullish().openapi({
      description:
        "The harness this agent's runs use unless a run names its own: `oz` (default), `claude`, `codex` or `gemini`. A harness other than `oz` takes its model from `model_id`, so `base_model` must then be empty; a factory's FOREMAN keeps `oz`.",
    }),
    base_harness: z
      .enum(BASE_HARNESSES, {
        error: (issue) =>
          `unknown harness ${JSON.stringify(issue.input)}; the harnesses are ${HARNESS_TYPES.join(', ')} (an empty string clears it)`,
      })
      .nullish()
      .openapi({
        description:
          'Deprecated: `harness.type` alone (the older clients send it). With `harness` too, `harness` wins and a different type is 400.',
      }),
    harness_auth_secrets: harnessAuthSecretsSchema.nullish(),
    inference_providers: unavailableMap('models come from the providers the operator configures'),
    credential_strategy: unavailableChoice(
      ['CREATOR', 'EXECUTOR'],
      "repositories are cloned with the environment's token",
    ),
    default_runner_uid: unavailableString(128, "runs execute on this service's workers; use `worker_host`"),
    memory: unavailableMap('there are no memory stores'),
    secrets: unavailableList(z.strictObject({ name: z.string() }), 'give credentials to MCP servers in `mcp_servers`'),
  })
  .openapi('AgentIdentityRequest');

export type AgentIdentityBody = z.infer<typeof agentIdentityBodySchema>;

/** An empty string, which in an update clears the field. */
const clears = z.literal('');

/**
 * `PUT /agent/identities/{uid}`: a partial update, as both official clients send it. A field
 * not sent, or sent as `null`, keeps its value; an empty string (an empty list for `skills`, an
 * empty object for `mcp_servers`, `approval` and `delivery`) clears it. `delivery`, which no
 * official client sends, is also cleared by `null`.
 */
export const agentIdentityUpdateSchema = agentIdentityBodySchema
  .partial()
  .extend({
    name: nonBlankText(200).optional(),
    environment_id: z.union([clears, agentConfigSchema.shape.environment_id.unwrap()]).nullish(),
    base_model: z.union([clears, agentConfigSchema.shape.model_id.unwrap()]).nullish(),
    factory_uid: z.union([clears, z.string().min(1).max(128)]).nullish(),
  })
  .openapi('AgentIdentityUpdateRequest');

export type AgentIdentityUpdate = z.infer<typeof agentIdentityUpdateSchema>;

/** `GET /agent/identities`. */
export const identityListQuerySchema = z.strictObject({
  factory_uid: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .openapi({ description: "Only that factory's agents (a factory of the caller's team)." }),
  ...resourcePageQuery,
});
