import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  environmentBodySchema,
  environmentConfigSchema,
  environmentListQuerySchema,
} from '../../core/schemas/environment-schemas';
import { z } from '../../core/schemas/zod';
import { linksTo, locationHeader, registerOperation, timestamp } from './common';
import type { toEnvironmentItem } from '../routes/environments-routes';
import type { Fits } from './fits';
import { resourcePageInfoSchema } from '../../core/schemas/resource-page-schemas';

const tags = ['Environments'];

/** `CloudEnvironment` (api/routes/environments-routes.ts `toEnvironmentItem`). */
const environmentSchema = z
  .object({
    uid: z.string(),
    config: environmentConfigSchema,
    setup_failed: z.boolean(),
    last_updated: timestamp(),
    created_at: timestamp(),
    creator: z.object({ uid: z.string(), type: z.string(), display_name: z.string() }),
  })
  .openapi('Environment');

const uidParams = z.object({
  uid: z.string().openapi({ param: { description: 'The environment uid (22 letters and digits).' } }),
});

export function registerEnvironmentOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/environments',
    operationId: 'listEnvironments',
    summary: "List your team's environments",
    tags,
    query: environmentListQuerySchema,
    responses: [
      {
        status: 200,
        description: 'The environments.',
        schema: z.object({ environments: z.array(environmentSchema), page_info: resourcePageInfoSchema }),
      },
    ],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/environments',
    operationId: 'createEnvironment',
    summary: 'Create an environment',
    tags,
    body: { schema: environmentBodySchema },
    responses: [
      {
        status: 201,
        description: 'The environment.',
        schema: environmentSchema,
        headers: locationHeader,
        links: linksTo('/uid', 'uid', ['getEnvironment', 'replaceEnvironment', 'deleteEnvironment']),
      },
    ],
    errors: [400, 403],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/environments/{uid}',
    operationId: 'getEnvironment',
    summary: 'Get an environment',
    tags,
    params: uidParams,
    responses: [{ status: 200, description: 'The environment.', schema: environmentSchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'put',
    path: '/api/v1/agent/environments/{uid}',
    operationId: 'replaceEnvironment',
    summary: "Replace an environment's config",
    tags,
    params: uidParams,
    body: { schema: environmentBodySchema },
    responses: [{ status: 200, description: 'The environment.', schema: environmentSchema }],
    errors: [400, 403, 404],
  });
  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/agent/environments/{uid}',
    operationId: 'deleteEnvironment',
    summary: 'Delete an environment',
    description: 'The factories found in its repositories go with it.',
    tags,
    params: uidParams,
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: [400, 404],
  });
}

/** What the environment routes build is what the document says an environment is. */
export type EnvironmentFits = Fits<typeof environmentSchema, ReturnType<typeof toEnvironmentItem>>;
