import { jsonSchema, z } from './zod';
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, MAX_ATTACHMENTS_TOTAL_BYTES } from '../attachments';
import { MODEL_PROVIDERS } from '../model-providers';
import { RUN_SOURCES, RUN_STATES } from '../run-state';
import { SKILL_SPEC_RE, SKILL_SPEC_RULE } from '../skill-spec';
import { ARTIFACT_TYPES } from '../artifact-types';
import { unavailableChoice, unavailableList, unavailableMap, unavailableString } from './not-available';
import { NOT_BLANK_PATTERN, notBlank, VISIBLE } from './text';

/** Request schemas of the runs API, defined once; validation and the OpenAPI document come from here. */

export const MAX_PROMPT_CHARS = 100_000;
export const MAX_TITLE_CHARS = 200;

export const skillSpecSchema = z.string().regex(SKILL_SPEC_RE, SKILL_SPEC_RULE);

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

/** `harness` as the official clients send it; only this service's own harness (`oz`) runs here. */
export const harnessSchema = z
  .strictObject({
    type: z
      .enum(['oz', 'claude', 'gemini', 'codex'])
      .optional()
      .openapi({ enum: ['oz'], description: "Only `oz`, this service's own agent loop; others are 400." }),
    model_id: z.string().max(200).optional(),
    reasoning_level: z.string().max(50).optional(),
  })
  .openapi('Harness');

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
    // Sent by the official clients; recognised so that asking for them is a clear
    // `feature_not_available` (see api/run-request-fields.ts), and asking for nothing is fine.
    worker_host: z.string().max(255).nullish(),
    harness: harnessSchema.nullish(),
    harness_auth_secrets: unavailableMap('there are no third-party harnesses'),
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

const METADATA_KEY_RE = /^[a-zA-Z0-9._-]{1,64}$/;

export const metadataSchema = z
  .record(z.string(), z.string())
  .superRefine((metadata, ctx) => {
    const keys = Object.keys(metadata);
    if (keys.length > 20) ctx.addIssue({ code: 'custom', message: `at most 20 keys (got ${keys.length})` });
    for (const key of keys) {
      if (!METADATA_KEY_RE.test(key)) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'keys must match [a-zA-Z0-9._-]{1,64}' });
      }
      const value = metadata[key]!;
      if (Buffer.byteLength(value, 'utf8') > 256) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'values are at most 256 bytes' });
      }
      if (value.includes('\u0000'))
        ctx.addIssue({ code: 'custom', path: [key], message: 'values may not contain NUL' });
    }
  })
  .openapi(
    'Metadata',
    jsonSchema({
      description: 'Up to 20 keys of [a-zA-Z0-9._-]{1,64}; each value at most 256 bytes of UTF-8.',
      propertyNames: { pattern: METADATA_KEY_RE.source },
      maxProperties: 20,
      additionalProperties: { type: 'string', maxLength: 256 },
    }),
  );

const idSchema = z.string().min(1).max(128);

/** Standard, padded base64; a loop, since a regular expression over megabytes overflows the stack. */
export function isBase64(data: string): boolean {
  if (data.length % 4 !== 0) return false;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  for (let i = 0; i < data.length - padding; i++) {
    const c = data.charCodeAt(i);
    const ok =
      (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 /* + */ || c === 47; /* / */
    if (!ok) return false;
  }
  return true;
}

/** Bytes that `data` (standard base64, padded) decodes to. */
export function base64DecodedBytes(data: string): number {
  return (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

/** What isBase64 accepts, for the document (a regular expression over megabytes would overflow the stack here). */
const BASE64_PATTERN = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';
/** The longest base64 text of MAX_ATTACHMENT_BYTES. */
const MAX_ATTACHMENT_BASE64_CHARS = Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4;
const MIME_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

const attachmentSchema = z.strictObject({
  data: z
    .string()
    .superRefine((data, ctx) => {
      // The size first: a megabytes-long string is refused before it is looked at character by character.
      if (data.length > MAX_ATTACHMENT_BASE64_CHARS + 4) {
        ctx.addIssue({
          code: 'custom',
          message: `the file is larger than the limit of ${MAX_ATTACHMENT_BYTES} bytes per attachment`,
        });
      } else if (!isBase64(data)) {
        ctx.addIssue({ code: 'custom', message: 'must be standard base64 (A-Z a-z 0-9 + /, padded with =)' });
      } else if (base64DecodedBytes(data) > MAX_ATTACHMENT_BYTES) {
        ctx.addIssue({
          code: 'custom',
          message: `the file is larger than the limit of ${MAX_ATTACHMENT_BYTES} bytes per attachment`,
        });
      }
    })
    .openapi(
      jsonSchema({
        description: `The file, standard base64 (padded); at most ${MAX_ATTACHMENT_BYTES} bytes decoded.`,
        pattern: BASE64_PATTERN,
        maxLength: MAX_ATTACHMENT_BASE64_CHARS,
        contentEncoding: 'base64',
      }),
    ),
  file_name: z.string().min(1).max(1024),
  mime_type: z.string().max(255).regex(MIME_TYPE, 'must be a MIME type such as text/plain'),
});

export const attachmentsSchema = z
  .array(attachmentSchema)
  .max(MAX_ATTACHMENTS, `at most ${MAX_ATTACHMENTS} attachments`)
  .superRefine((attachments, ctx) => {
    const total = attachments.reduce((sum, a) => sum + base64DecodedBytes(a.data), 0);
    if (total > MAX_ATTACHMENTS_TOTAL_BYTES) {
      ctx.addIssue({
        code: 'custom',
        message: `the attachments add up to ${total} bytes, above the limit of ${MAX_ATTACHMENTS_TOTAL_BYTES} bytes in all`,
      });
    }
  });

/** `mode` as the document shows it: `orchestrate` is recognised, and refused with a pointer to factories. */
export const ORCHESTRATE_REFUSED = {
  enum: ['normal', 'plan'],
  description:
    '`normal` (default) or `plan`; `orchestrate` is 400 `feature_not_available` (send such work to a factory).',
};

export const createRunSchema = z
  .strictObject({
    prompt: z.string().max(MAX_PROMPT_CHARS).optional(),
    title: z.string().max(MAX_TITLE_CHARS).optional(),
    config: agentConfigSchema.optional(),
    skill: skillSpecSchema.optional(),
    metadata: metadataSchema.optional(),
    conversation_id: idSchema.optional(),
    parent_run_id: idSchema.optional(),
    agent_identity_uid: idSchema.optional(),
    attachments: attachmentsSchema.optional(),
    /** Sent by the official clients; every run here is already visible to the caller's team. */
    team: z.boolean().optional(),
    mode: z.enum(['normal', 'plan', 'orchestrate']).optional().openapi(ORCHESTRATE_REFUSED),
    /** A no-op here: every run can be followed live and steered with follow-ups. */
    interactive: z.boolean().optional(),
    on_behalf_of: z.string().min(1).max(320).optional(),
  })
  .superRefine((body, ctx) => {
    const skill = body.skill ?? body.config?.skill_spec;
    if ((body.prompt === undefined || body.prompt.trim() === '') && !skill) {
      ctx.addIssue({
        code: 'custom',
        path: ['prompt'],
        message: 'required (a non-empty prompt, unless a skill is given)',
      });
    }
  })
  .openapi(
    'CreateRunRequest',
    jsonSchema({
      description: 'A non-blank `prompt`, or a skill (`skill` or `config.skill_spec`), or both.',
      anyOf: [
        { required: ['prompt'], properties: { prompt: { pattern: NOT_BLANK_PATTERN } } },
        { required: ['skill'] },
        {
          required: ['config'],
          properties: { config: { $ref: '#/components/schemas/AgentConfig', required: ['skill_spec'] } },
        },
      ],
    }),
  );

export type CreateRunRequest = z.infer<typeof createRunSchema>;

/** `POST /agent/factories/{uid}/runs`: work for a factory's foreman. */
export const factoryDispatchSchema = z.strictObject({
  prompt: notBlank(z.string().max(MAX_PROMPT_CHARS), 'required (a non-empty prompt: the work for the factory)'),
  title: z.string().max(MAX_TITLE_CHARS).optional(),
  metadata: metadataSchema.optional(),
  attachments: attachmentsSchema.optional(),
});

export type FactoryDispatchRequest = z.infer<typeof factoryDispatchSchema>;

export const FOLLOWUP_MODES = ['normal', 'plan', 'orchestrate'] as const;

export const followupSchema = z
  .strictObject({
    message: z.string().min(1).max(MAX_PROMPT_CHARS),
    mode: z.enum(FOLLOWUP_MODES).optional().openapi(ORCHESTRATE_REFUSED),
  })
  .openapi('FollowupRequest');

export type FollowupRequest = z.infer<typeof followupSchema>;

/** States the official clients know; valid in a filter even where this service never uses them. */
export const CLIENT_ONLY_STATES = ['PENDING', 'CLAIMED', 'BLOCKED'] as const;
export const RUN_SORT_FIELDS = ['updated_at', 'created_at', 'title'] as const;
export const LIST_RUNS_DEFAULT_LIMIT = 20;
export const LIST_RUNS_MAX_LIMIT = 100;
export const MAX_METADATA_FILTERS = 5;
const rfc3339 = z.string().optional().openapi({ format: 'date-time', description: 'An RFC 3339 timestamp.' });

/**
 * The query of `GET /agent/runs`. api/list-runs-query.ts parses it (repeated `state`, the
 * `metadata[KEY]` pairs, cursors bound to their filters) and accepts exactly these parameters.
 */
export const listRunsQuerySchema = z.strictObject({
  state: z
    .array(z.enum([...RUN_STATES, ...CLIENT_ONLY_STATES]))
    .optional()
    .openapi({ description: 'Repeatable: `state=QUEUED&state=INPROGRESS`.' }),
  name: z.string().optional().openapi({ description: 'Exact match on `agent_config.name`.' }),
  model_id: z.string().optional().openapi({ description: 'Exact match on `agent_config.model_id`.' }),
  creator: z.string().optional().openapi({ description: "The creator's uid." }),
  source: z.enum(RUN_SOURCES).optional(),
  schedule_id: z.string().optional().openapi({ description: 'Runs created by that schedule.' }),
  ancestor_run_id: z
    .string()
    .optional()
    .openapi({ description: 'Every run below that run (its children, theirs, …).' }),
  factory_uid: z.string().optional().openapi({ description: 'Runs executed by an agent of that factory.' }),
  environment_id: z
    .string()
    .optional()
    .openapi({ description: '`empty-environment` selects runs without an environment.' }),
  skill_spec: skillSpecSchema.optional().openapi({ description: 'Runs started from that skill.' }),
  skill: skillSpecSchema.optional().openapi({ description: 'Alias of `skill_spec`.' }),
  created_after: rfc3339,
  created_before: rfc3339,
  updated_after: rfc3339,
  q: z
    .string()
    .max(1000)
    .optional()
    .openapi({ description: 'Case-insensitive substring of title, prompt or skill spec.' }),
  metadata: z
    .record(z.string().regex(METADATA_KEY_RE), z.string())
    .optional()
    .openapi(
      jsonSchema({
        description: '`metadata[KEY]=VALUE`, up to 5 pairs; all must match.',
        propertyNames: { pattern: METADATA_KEY_RE.source },
        maxProperties: MAX_METADATA_FILTERS,
        param: { style: 'deepObject', explode: true },
      }),
    ),
  artifact_type: z
    .enum(ARTIFACT_TYPES)
    .optional()
    .openapi({ description: 'Runs with at least one artifact of that type.' }),
  sort_by: z.enum(RUN_SORT_FIELDS).optional().openapi({ default: 'updated_at' }),
  sort_order: z.enum(['asc', 'desc']).optional().openapi({ default: 'desc' }),
  limit: z.number().int().min(1).max(LIST_RUNS_MAX_LIMIT).optional().openapi({ default: LIST_RUNS_DEFAULT_LIMIT }),
  cursor: z.string().optional().openapi({ description: '`page_info.next_cursor` of the previous page.' }),
});
