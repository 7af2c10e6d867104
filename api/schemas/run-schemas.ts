import { z } from 'zod';
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, MAX_ATTACHMENTS_TOTAL_BYTES } from '../../core/attachments';
import { SKILL_SPEC_RE, SKILL_SPEC_RULE } from '../../core/skill-spec';

/** Request schemas of the runs API, defined once; validation and (later) OpenAPI come from here. */

export const MAX_PROMPT_CHARS = 100_000;
export const MAX_TITLE_CHARS = 200;

export const skillSpecSchema = z.string().regex(SKILL_SPEC_RE, SKILL_SPEC_RULE);

const stringMap = z.record(z.string().max(1024), z.string().max(8192));

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
  });

export const agentConfigSchema = z.strictObject({
  name: z.string().min(1).max(200).optional(),
  model_id: z
    .string()
    .max(200)
    .regex(/^[a-z0-9-]+\/\S+$/, 'must be `<provider>/<model>`, e.g. `openai/gpt-4o`')
    .optional(),
  base_prompt: z.string().max(MAX_PROMPT_CHARS).optional(),
  environment_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be an environment uid')
    .optional(),
  skill_spec: skillSpecSchema.optional(),
  mcp_servers: z
    .record(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'server names are 1-64 of [A-Za-z0-9_-]'), mcpServerSchema)
    .refine((m) => Object.keys(m).length <= 20, 'at most 20 MCP servers')
    .optional(),
  idle_timeout_minutes: z.number().int().min(0).max(1440).optional(),
  /** Limits of the agent loop for this run; the service's defaults apply when absent. */
  max_steps: z.number().int().min(1).max(10_000).optional(),
  max_tokens: z.number().int().min(1).max(1_000_000_000).optional(),
  computer_use_enabled: z.boolean().optional(),
  skills: z.array(skillSpecSchema).max(50).optional(),
  // Sent by the official clients; recognised so that asking for them is a clear
  // `feature_not_available` (see api/run-request-fields.ts), and asking for nothing is fine.
  worker_host: z.string().max(255).nullish(),
  harness: z
    .strictObject({
      type: z.enum(['oz', 'claude', 'gemini', 'codex']).optional(),
      model_id: z.string().max(200).optional(),
      reasoning_level: z.string().max(50).optional(),
    })
    .nullish(),
  harness_auth_secrets: z.record(z.string(), z.unknown()).nullish(),
  inference_providers: z.record(z.string(), z.unknown()).nullish(),
  credential_strategy: z.enum(['CREATOR', 'EXECUTOR']).nullish(),
  memory_stores: z.array(z.unknown()).nullish(),
  runner_id: z.string().max(128).nullish(),
  session_sharing: z.record(z.string(), z.unknown()).nullish(),
});

const METADATA_KEY_RE = /^[a-zA-Z0-9._-]{1,64}$/;

export const metadataSchema = z.record(z.string(), z.string()).superRefine((metadata, ctx) => {
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
    if (value.includes('\u0000')) ctx.addIssue({ code: 'custom', path: [key], message: 'values may not contain NUL' });
  }
});

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

const attachmentSchema = z.strictObject({
  data: z.string().superRefine((data, ctx) => {
    // The size first: a megabytes-long string is refused before it is looked at character by character.
    if (data.length > Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4 + 4) {
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
  }),
  file_name: z.string().min(1).max(1024),
  mime_type: z
    .string()
    .max(255)
    .regex(/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i, 'must be a MIME type such as text/plain'),
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
    mode: z.enum(['normal', 'plan', 'orchestrate']).optional(),
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
  });

export type CreateRunRequest = z.infer<typeof createRunSchema>;

/** `POST /agent/factories/{uid}/runs`: work for a factory's foreman. */
export const factoryDispatchSchema = z.strictObject({
  prompt: z
    .string()
    .max(MAX_PROMPT_CHARS)
    .refine((p) => p.trim() !== '', 'required (a non-empty prompt: the work for the factory)'),
  title: z.string().max(MAX_TITLE_CHARS).optional(),
  metadata: metadataSchema.optional(),
  attachments: attachmentsSchema.optional(),
});

export type FactoryDispatchRequest = z.infer<typeof factoryDispatchSchema>;

export const FOLLOWUP_MODES = ['normal', 'plan', 'orchestrate'] as const;

export const followupSchema = z.strictObject({
  message: z.string().min(1).max(MAX_PROMPT_CHARS),
  mode: z.enum(FOLLOWUP_MODES).optional(),
});

export type FollowupRequest = z.infer<typeof followupSchema>;
