import { z } from 'zod';
import { AGENT_TYPES } from '../../db/agent-identities';
import { agentConfigSchema, mcpServerSchema, MAX_PROMPT_CHARS, skillSpecSchema } from './run-schemas';

/** `harness` as the official clients send it; only this service's own harness (`oz`) runs here. */
export const harnessSchema = z.strictObject({
  type: z.enum(['oz', 'claude', 'gemini', 'codex']).optional(),
  model_id: z.string().max(200).optional(),
  reasoning_level: z.string().max(50).optional(),
});

/**
 * `POST`/`PUT /agent/identities` bodies. Fields the clients send that have no meaning here
 * (memory, secrets, runners, other harnesses, inference providers, credential strategies) are
 * recognised so that asking for them is a clear `feature_not_available`, and asking for nothing
 * (null, empty) is fine.
 */
export const agentIdentityBodySchema = z.strictObject({
  name: z.string().trim().min(1).max(200),
  description: z.string().max(2000).nullish(),
  prompt: z.string().max(MAX_PROMPT_CHARS).nullish(),
  agent_type: z.enum(AGENT_TYPES).nullish(),
  factory_uid: z.string().min(1).max(128).nullish(),
  environment_id: agentConfigSchema.shape.environment_id.nullable(),
  base_model: agentConfigSchema.shape.model_id.nullable(),
  mcp_servers: z
    .record(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'server names are 1-64 of [A-Za-z0-9_-]'), mcpServerSchema)
    .refine((m) => Object.keys(m).length <= 20, 'at most 20 MCP servers')
    .nullish(),
  skills: z.array(skillSpecSchema).max(50).nullish(),
  worker_host: z.string().trim().max(255).nullish(),
  on_behalf_of_enabled: z.boolean().nullish(),
  harness: harnessSchema.nullish(),
  base_harness: z.string().max(50).nullish(),
  harness_auth_secrets: z.record(z.string(), z.unknown()).nullish(),
  inference_providers: z.record(z.string(), z.unknown()).nullish(),
  credential_strategy: z.enum(['CREATOR', 'EXECUTOR']).nullish(),
  default_runner_uid: z.string().max(128).nullish(),
  memory: z.record(z.string(), z.unknown()).nullish(),
  secrets: z.array(z.strictObject({ name: z.string() })).nullish(),
});

export type AgentIdentityBody = z.infer<typeof agentIdentityBodySchema>;
