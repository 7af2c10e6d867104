import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { AGENT_TYPES } from '../../db/agent-identity-reads';
import {
  factoryBodySchema,
  factoryResourceListQuerySchema,
  factoryTicketDispatchSchema,
  factoryValidateBodySchema,
} from '../../core/schemas/factory-schemas';
import { RUN_STATES } from '../../core/run-state';
import { z } from '../../core/schemas/zod';
import { idempotencyHeaders, linksTo, locationHeader, registerOperation, timestamp } from './common';
import type { toFactoryItem, toFactoryResource } from '../factory-item';
import type { Fits } from './fits';
import { resourcePageInfoSchema, resourcePageQuerySchema } from '../../core/schemas/resource-page-schemas';

const tags = ['Factories'];

/** A factory (api/factory-item.ts). */
const factorySchema = z
  .object({
    uid: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    environment_id: z.string().nullable(),
    instructions: z.string().nullable(),
    agents: z.array(z.object({ uid: z.string(), name: z.string(), agent_type: z.enum(AGENT_TYPES) })),
    source: z.union([
      z.object({ type: z.literal('API') }),
      z.object({ type: z.literal('FILE'), environment_id: z.string(), repository: z.string(), path: z.string() }),
    ]),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .openapi('Factory');

/** `POST /agent/factories/validate` (core/factory-file.ts). */
const factoryValidationSchema = z
  .union([
    z.object({
      valid: z.literal(true),
      factory: z.object({
        name: z.string(),
        description: z.string(),
        agents: z.array(
          z.object({
            name: z.string(),
            agent_type: z.enum(AGENT_TYPES),
            description: z.string().nullable(),
            prompt: z.string().nullable(),
            base_model: z.string().nullable(),
            skills: z.array(z.string()),
          }),
        ),
        instructions: z.string(),
      }),
    }),
    z.object({
      valid: z.literal(false),
      errors: z.array(z.object({ path: z.string(), message: z.string() })),
    }),
  ])
  .openapi('FactoryValidation');

const uidParams = z.object({ uid: z.string().openapi({ param: { description: 'The factory uid.' } }) });

export function registerFactoryOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/factories/validate',
    operationId: 'validateFactoryFile',
    summary: 'Check a FACTORY.md',
    description:
      'Parses the file as a factory found in a repository would be; a file with problems is 200 with `valid: false`.',
    tags,
    body: { schema: factoryValidateBodySchema },
    responses: [
      {
        status: 200,
        description: 'Whether the file is valid, and what it defines or what is wrong.',
        schema: factoryValidationSchema,
      },
    ],
  });
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/factories',
    operationId: 'createFactory',
    summary: 'Create a factory',
    tags,
    body: { schema: factoryBodySchema },
    responses: [
      {
        status: 201,
        description: 'The factory.',
        schema: factorySchema,
        headers: locationHeader,
        links: linksTo('/uid', 'uid', ['getFactory', 'replaceFactory', 'deleteFactory', 'dispatchToFactory']),
      },
    ],
    errors: [400, 404, 409],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/factories',
    operationId: 'listFactories',
    summary: "List your team's factories",
    tags,
    query: resourcePageQuerySchema,
    responses: [
      {
        status: 200,
        description: 'The factories, oldest first.',
        schema: z.object({ factories: z.array(factorySchema), page_info: resourcePageInfoSchema }),
      },
    ],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/factories/{uid}',
    operationId: 'getFactory',
    summary: 'Get a factory',
    tags,
    params: uidParams,
    responses: [{ status: 200, description: 'The factory.', schema: factorySchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'put',
    path: '/api/v1/agent/factories/{uid}',
    operationId: 'replaceFactory',
    summary: 'Replace a factory',
    description: 'A factory defined by a FACTORY.md (`source.type` FILE) is changed only through that file (409).',
    tags,
    params: uidParams,
    body: { schema: factoryBodySchema },
    responses: [{ status: 200, description: 'The factory.', schema: factorySchema }],
    errors: [400, 404, 409],
  });
  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/agent/factories/{uid}',
    operationId: 'deleteFactory',
    summary: 'Delete a factory',
    tags,
    params: uidParams,
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: [400, 404, 409],
  });
}

/** What api/factory-item.ts builds is what the document says a factory is. */
export type FactoryFits = Fits<typeof factorySchema, ReturnType<typeof toFactoryItem>>;

/** A factory at `/factory` (api/factory-item.ts `toFactoryResource`). */
const factoryResourceSchema = factorySchema
  .extend({
    team_uid: z.string(),
    default_environment: z.string().optional(),
    agent_defaults: z.object({
      default_runner_uid: z.string(),
      mcp_servers: z.record(z.string(), z.unknown()),
      secrets: z.array(z.unknown()),
      worker_host: z.string(),
    }),
    code_forge: z.enum(['GITHUB', 'NONE']),
    code_forges: z.array(z.enum(['GITHUB', 'NONE'])),
    credential_strategy: z.literal('CREATOR'),
    repositories: z.array(z.object({ owner: z.string(), repo: z.string(), code_forge: z.literal('GITHUB') })),
    scorer_defaults: z.object({}),
    scoring: z.object({}),
  })
  .openapi('FactoryResource', {
    description: "A factory as `/factory` shows it: the `Factory` fields and the newest official client's.",
  });

export type FactoryResourceFits = Fits<typeof factoryResourceSchema, ReturnType<typeof toFactoryResource>>;

const factoryTicketRunSchema = z
  .object({
    factory_uid: z.string(),
    foreman_agent: z.string().openapi({ description: "The foreman's name." }),
    run_id: z.uuid(),
    state: z.enum(RUN_STATES),
    ticket_ref: z.string().openapi({
      description:
        'The `<source>:<id>` reference the run was stamped with: the one sent, in canonical form (the source in lower case), or the adhoc `adhoc:<run id>` minted when none was.',
    }),
  })
  .openapi('FactoryTicketRun');

/** `/factory`: the newest official client's paths for the same factories. */
export function registerFactoryResourceOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory',
    operationId: 'listFactoryResources',
    summary: "List your team's factories (the newest client's shape)",
    tags,
    query: factoryResourceListQuerySchema,
    responses: [
      {
        status: 200,
        description: 'The factories, oldest first.',
        schema: z.object({ factories: z.array(factoryResourceSchema), page_info: resourcePageInfoSchema }),
      },
    ],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory/{uid}',
    operationId: 'getFactoryResource',
    summary: "Get a factory (the newest client's shape)",
    tags,
    params: uidParams,
    responses: [{ status: 200, description: 'The factory.', schema: factoryResourceSchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/factory/{uid}/runs',
    operationId: 'dispatchTicketToFactory',
    summary: "Create a run of a factory's foreman, for a ticket",
    description:
      "As `POST /agent/factories/{uid}/runs`, for a ticket: the run's `metadata` says which (`ticket_source`, `ticket_id`, and `ticket_url` when sent), and the factory's task for the work is made with the run (in TRIAGE, titled as the run, bound to its conversation): `GET /factory/{uid}/task-by-run?run_id=` finds it as soon as this answers. Without `ticket_ref`, an adhoc reference is minted.",
    tags,
    params: uidParams,
    headers: idempotencyHeaders,
    body: { schema: factoryTicketDispatchSchema },
    responses: [
      { status: 201, description: 'The run was created.', schema: factoryTicketRunSchema, headers: locationHeader },
    ],
    errors: [400, 403, 404, 409],
  });
}
