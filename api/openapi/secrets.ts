import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import {
  createManagedSecretSchema,
  managedSecretItemSchema,
  managedSecretListSchema,
  managedSecretNameSchema,
} from '../../core/schemas/managed-secret-schemas';
import { resourcePageQuerySchema } from '../../core/schemas/resource-page-schemas';
import { locationHeader, registerOperation } from './common';

const nameParams = z.object({ name: managedSecretNameSchema.openapi({ param: { description: 'The secret name.' } }) });

/** A team's managed secrets: written by admin keys, read by name and kind only. */
export function registerSecretOperations(registry: OpenAPIRegistry): void {
  const tags = ['Secrets'];
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/secrets',
    operationId: 'storeSecret',
    summary: 'Store a secret, or replace the value of the one of that name',
    description:
      "Admin keys only. A new name is 201; a name the team has is 200, its value, kind and description replaced (a description left out is cleared). The value is encrypted under the service's secrets key and never returned. Runs name it in `harness_auth_secrets` (Claude Code: `anthropic_api_key` or `claude_oauth_token`; Codex: `openai_api_key`). Past `TEAM_MAX_SECRETS` a new name is 409.",
    tags,
    body: { schema: createManagedSecretSchema },
    responses: [
      { status: 201, description: 'Stored.', schema: managedSecretItemSchema, headers: locationHeader },
      { status: 200, description: 'Replaced.', schema: managedSecretItemSchema, headers: locationHeader },
    ],
    errors: [400, 403, 409],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/secrets',
    operationId: 'listSecrets',
    summary: "The team's secrets by name (never their values)",
    tags,
    query: resourcePageQuerySchema,
    responses: [{ status: 200, description: 'The secrets.', schema: managedSecretListSchema }],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/secrets/{name}',
    operationId: 'getSecret',
    summary: 'A secret (its name, kind and dates)',
    tags,
    params: nameParams,
    responses: [{ status: 200, description: 'The secret.', schema: managedSecretItemSchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/agent/secrets/{name}',
    operationId: 'deleteSecret',
    summary: 'Delete a secret; runs that name it fail their next turn',
    tags,
    params: nameParams,
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: [400, 403, 404],
  });
}
