import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { AGENT_TYPES } from '../../db/agent-identity-reads';
import { HARNESS_TYPES } from '../../core/harnesses';
import { agentIdentityBodySchema } from '../../core/schemas/agent-identity-schemas';
import { z } from '../../core/schemas/zod';
import { linksTo, locationHeader, registerOperation } from './common';
import { mcpServerViewSchema } from './run-responses';
import { timestamp } from './common';
import type { toAgentIdentityItem } from '../agent-identity-item';
import type { Fits } from './fits';
import { resourcePageInfoSchema } from '../../core/schemas/resource-page-schemas';
import { identityListQuerySchema } from '../../core/schemas/agent-identity-schemas';
import { approvalPolicySchema } from '../../core/schemas/approval-schemas';
import { deliverySchema } from '../../core/schemas/delivery-schemas';

const tags = ['Agent identities'];

/** `AgentResponse` (api/agent-identity-item.ts). */
const agentIdentitySchema = z
  .object({
    uid: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    prompt: z.string().nullable(),
    agent_type: z.enum(AGENT_TYPES),
    factory_uid: z.string().nullable(),
    environment_id: z.string().nullable(),
    base_model: z.string().nullable(),
    mcp_servers: z.record(z.string(), mcpServerViewSchema).nullable(),
    skills: z.array(z.string()),
    worker_host: z.string().nullable(),
    on_behalf_of_enabled: z.boolean(),
    harness: z
      .object({ type: z.enum(HARNESS_TYPES), model_id: z.string().optional(), reasoning_level: z.string().optional() })
      .openapi({ description: "The harness the agent's runs use unless they name one; `oz` when none is set." }),
    base_harness: z.enum(HARNESS_TYPES).openapi({ description: 'Deprecated: `harness.type`.' }),
    harness_auth_secrets: z
      .object({ claude_auth_secret_name: z.string().optional(), codex_auth_secret_name: z.string().optional() })
      .nullable()
      .openapi({
        description: 'The names of the managed secrets its harness authenticates with (never their values).',
      }),
    approval: approvalPolicySchema.optional(),
    // A union, not .nullable(): on a registered schema that becomes an allOf no null passes.
    delivery: z.union([deliverySchema, z.null()]).openapi({
      description: "What the agent's runs do with a turn's change unless a run sets it (null: nothing).",
    }),
    available: z.boolean(),
    default_runner_uid: z.string(),
    memory: z.object({
      attached_stores: z.array(z.unknown()),
      auto_memory: z.object({ enabled: z.boolean() }),
    }),
    secrets: z.array(z.unknown()),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .openapi('AgentIdentity');

const uidParams = z.object({ uid: z.string().openapi({ param: { description: 'The agent uid (`sa_…`).' } }) });

export function registerIdentityOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/identities',
    operationId: 'createAgentIdentity',
    summary: 'Create an agent identity',
    tags,
    body: { schema: agentIdentityBodySchema },
    responses: [
      {
        status: 201,
        description: 'The agent.',
        schema: agentIdentitySchema,
        headers: locationHeader,
        links: linksTo('/uid', 'uid', ['getAgentIdentity', 'replaceAgentIdentity', 'deleteAgentIdentity']),
      },
    ],
    errors: [400, 403, 404, 409],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/identities',
    operationId: 'listAgentIdentities',
    summary: "List your team's agent identities",
    tags,
    query: identityListQuerySchema,
    responses: [
      {
        status: 200,
        description: 'The agents, oldest first.',
        schema: z.object({ agents: z.array(agentIdentitySchema), page_info: resourcePageInfoSchema }),
      },
    ],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/identities/{uid}',
    operationId: 'getAgentIdentity',
    summary: 'Get an agent identity',
    tags,
    params: uidParams,
    responses: [{ status: 200, description: 'The agent.', schema: agentIdentitySchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'put',
    path: '/api/v1/agent/identities/{uid}',
    operationId: 'replaceAgentIdentity',
    summary: 'Replace an agent identity',
    description: 'An agent defined by a FACTORY.md is changed only through that file (409).',
    tags,
    params: uidParams,
    body: { schema: agentIdentityBodySchema },
    responses: [{ status: 200, description: 'The agent.', schema: agentIdentitySchema }],
    errors: [400, 403, 404, 409],
  });
  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/agent/identities/{uid}',
    operationId: 'deleteAgentIdentity',
    summary: 'Delete an agent identity',
    description: 'Revokes all its keys at once; its runs keep naming it.',
    tags,
    params: uidParams,
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: [400, 404, 409],
  });
}

/** What api/agent-identity-item.ts builds is what the document says an agent is. */
export type AgentIdentityFits = Fits<typeof agentIdentitySchema, ReturnType<typeof toAgentIdentityItem>>;
