import { jsonSchema, z } from './zod';
import { MODEL_PROVIDERS } from '../model-providers';
import { unavailableChoice, unavailableList, unavailableMap, unavailableString } from './not-available';
import { MAX_PROMPT_CHARS, skillSpecSchema } from './run-fields';
import { VISIBLE } from './text';
import { HARNESS_TYPES } from '../harnesses';
import { managedSecretNameSchema } from './managed-secret-schemas';
import { approvalPolicySchema } from './approval-schemas';
import { deliverySchema } from './delivery-schemas';

/** `config` of a run (and of schedules and agents): the model, MCP servers, harness and limits. */

const stringMap = z.record(z.string().max(1024), z.string().max(8192));

/** MCP server names, as record keys. */
const MCP_SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MCP_SERVER_NAME_RULE = 'server names are 1-64 of [A-Za-z0-9_-]';

export const mcpServerSchema = z
  .strictObject({
    command: z.string().min(1).max(4096).optional(),
    args: z.array(z.string().max(8192)).max(100).optional(),
    env: stringMap.optional(),
    url: z.url().max(4096).optional(),
    headers: stringMap.optional(),
  })
  .superRefine((server, ctx) => {
    const hasCommand = server.command !== undefined;
    const hasUrl = server.url !== undefined;
    if (hasCommand === hasUrl) {
      ctx.addIssue({ code: 'custom', message: 'give exactly one of `command` (stdio) or `url` (HTTP)' });
    }
    if (hasUrl && (server.args !== undefined || server.env !== undefined)) {
      ctx.addIssue({ code: 'custom', message: '`args` and `env` go with `command`, not with `url`' });
    }
    if (hasCommand && server.headers !== undefined) {
      ctx.addIssue({ code: 'custom', message: '`headers` go with `url`, not with `command`' });
    }
  })
  .openapi(
    'McpServer',
    jsonSchema({
      description: 'A stdio server (`command`, with `args` and `env`) or an HTTP one (`url`, with `headers`).',
      anyOf: [
        { required: ['command'], properties: { url: false, headers: false } },
        { required: ['url'], properties: { command: false, args: false, env: false } },
      ],
    }),
  );

/** `mcp_servers`: up to 20, by name. */
export const mcpServersSchema = z
  .record(z.string().regex(MCP_SERVER_NAME, MCP_SERVER_NAME_RULE), mcpServerSchema)
  .refine((m) => Object.keys(m).length <= 20, 'at most 20 MCP servers')
  .openapi(jsonSchema({ propertyNames: { pattern: MCP_SERVER_NAME.source }, maxProperties: 20 }));

/** `<provider>/<model>`, with a provider this service has. */
const MODEL_ID = new RegExp(`^(?:${MODEL_PROVIDERS.join('|')})/${VISIBLE}+$`);
const MODEL_ID_RULE = `must be \`<provider>/<model>\` with provider ${MODEL_PROVIDERS.join(' or ')}, e.g. \`openai/gpt-4o\``;

/** `harness`: which agent works the run, this service's own loop (`oz`) or a coding-agent CLI. */
export const harnessSchema = z
  .strictObject({
    type: z
      .enum(HARNESS_TYPES, {
        error: (issue) =>
          `unknown harness ${JSON.stringify(issue.input)}; the harnesses are ${HARNESS_TYPES.join(', ')}`,
      })
      .optional()
      .openapi({
        description:
          "`oz` (default): this service's own agent loop; `claude`: Claude Code; `codex`: Codex CLI; `gemini`: Gemini CLI. The CLIs run in the run's sandbox and reach their provider through the model gateway.",
      }),
    model_id: z
      .string()
      .max(200)
      .regex(new RegExp(`^(${VISIBLE}+)?$`), 'must be a model name without spaces, e.g. `claude-sonnet-4-5`')
      .optional()
      .openapi({ description: "The CLI's model; empty or absent: the CLI's own default. Ignored for `oz`." }),
    reasoning_level: z
      .string()
      .max(50)
      .optional()
      .openapi({ description: 'Codex: `minimal`, `low`, `medium` or `high`; ignored by the other harnesses.' }),
  })
  .openapi('Harness');

/** `harness_auth_secrets`: managed secrets (`/agent/secrets`) of the caller's team, by name. */
export const harnessAuthSecretsSchema = z
  .strictObject({
    claude_auth_secret_name: managedSecretNameSchema.nullish(),
    codex_auth_secret_name: managedSecretNameSchema.nullish(),
  })
  .openapi('HarnessAuthSecrets', {
    description:
      "The team's managed secret (`/agent/secrets`) a CLI harness authenticates with: `claude_auth_secret_name` for Claude Code (`anthropic_api_key` or `claude_oauth_token`), `codex_auth_secret_name` for Codex CLI (`openai_api_key`). A secret the team does not have, one of another kind, or the field of another harness than the run's is 400. Without it, the key the operator configured. The gateway puts it on the CLI's calls; it never enters the sandbox.",
  });

export const agentConfigSchema = z
  .strictObject({
    name: z.string().min(1).max(200).optional(),
    model_id: z.string().max(200).regex(MODEL_ID, MODEL_ID_RULE).optional(),
    base_prompt: z.string().max(MAX_PROMPT_CHARS).optional(),
    environment_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be an environment uid')
      .optional(),
    skill_spec: skillSpecSchema.optional(),
    mcp_servers: mcpServersSchema.optional(),
    idle_timeout_minutes: z.number().int().min(0).max(1440).optional(),
    /** Limits of the agent loop for this run; the service's defaults apply when absent. */
    max_steps: z.number().int().min(1).max(10_000).optional(),
    max_tokens: z.number().int().min(1).max(1_000_000_000).optional(),
    computer_use_enabled: z
      .boolean()
      .optional()
      .openapi({ enum: [false], description: 'Computer use is not available on this service: `true` is 400.' }),
    skills: z.array(skillSpecSchema).max(50).optional(),
    approval: approvalPolicySchema.optional(),
    delivery: deliverySchema.optional(),
    // Sent by the official clients; recognised so that asking for them is a clear
    // `feature_not_available` (see api/run-request-fields.ts), and asking for nothing is fine.
    worker_host: z.string().max(255).nullish(),
    harness: harnessSchema.nullish(),
    harness_auth_secrets: harnessAuthSecretsSchema.nullish(),
    inference_providers: unavailableMap('models come from the providers the operator configures'),
    credential_strategy: unavailableChoice(
      ['CREATOR', 'EXECUTOR'],
      "repositories are cloned with the environment's token",
    ),
    memory_stores: unavailableList(z.unknown(), 'there are no memory stores'),
    runner_id: unavailableString(128, "runs execute on this service's workers"),
    session_sharing: unavailableMap("a run's transcript is shared through its `session_link`"),
  })
  .openapi('AgentConfig');
