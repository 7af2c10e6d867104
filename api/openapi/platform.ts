import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import type { listModels } from '../../services/platform/model-list';
import { registerOperation } from './common';
import type { Fits } from './fits';

/** `GET /agent/models` (services/platform/model-list.ts `listModels`). */
const modelListSchema = z
  .object({
    default_model_id: z.string().openapi({ description: 'The model of runs that do not name one.' }),
    models: z.array(
      z.object({
        id: z.string().openapi({ description: 'What a run names as `config.model_id`: `<provider>/<model>`.' }),
        display_name: z.string(),
        provider: z.enum(['OPENAI', 'ANTHROPIC', 'GOOGLE', 'UNKNOWN']),
        vision_supported: z.boolean().openapi({ description: 'Always false: the agent loop sends the model text.' }),
        description: z.string().optional(),
        disable_reason: z
          .enum(['ADMIN_DISABLED'])
          .optional()
          .openapi({ description: "Set on the default model when its provider's key is not configured." }),
      }),
    ),
  })
  .openapi('ModelList');

const egressRangesSchema = z
  .object({
    cidrs: z.array(z.string()).openapi({
      description:
        'IPv4 and IPv6 networks, canonical and deduplicated (EGRESS_CIDRS); empty when the operator has not said.',
    }),
  })
  .openapi('EgressRanges');

export function registerPlatformOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/models',
    operationId: 'listModels',
    summary: 'The models a run of this deployment can use',
    description:
      'The known models (built-in, MODEL_PRICES, MODEL_CONTEXT_TOKENS) of the providers whose key is configured, the default first.',
    tags: ['Service'],
    responses: [{ status: 200, description: 'The models.', schema: modelListSchema }],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/networking/egress-ranges',
    operationId: 'getEgressRanges',
    summary: "The networks runs' traffic leaves from",
    tags: ['Service'],
    responses: [{ status: 200, description: 'The networks.', schema: egressRangesSchema }],
    errors: [400],
  });
}

export type ModelListFits = Fits<typeof modelListSchema, ReturnType<typeof listModels>>;
