import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import {
  checkpointItemSchema,
  checkpointListQuerySchema,
  checkpointListSchema,
  forkRunSchema,
} from '../../core/schemas/checkpoint-schemas';
import type { toCheckpointItem, toCheckpointSummary } from '../../services/views/checkpoint-views';
import { idempotencyHeaders, locationHeader, registerOperation, signatureParameters } from './common';
import type { Fits } from './fits';
import { forkRunResponseSchema } from './run-responses';
import { runIdParams } from './runs';

const tags = ['Runs'];
const checkpointParams = runIdParams.extend({
  checkpointId: z.uuid().openapi({ param: { description: 'The checkpoint id.' } }),
});

/** A run's checkpoints, their downloads and forks (wire contract: "Checkpoints, resume and forks"). */
export function registerCheckpointOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs/{runId}/checkpoints',
    operationId: 'listCheckpoints',
    summary: "A run's checkpoints, oldest first",
    description:
      "Each records the run's files after a step that changed them (and as provisioned: turn and step 0); `bytes_added` is what it stored that no earlier checkpoint of the run had.",
    tags,
    params: runIdParams,
    query: checkpointListQuerySchema,
    responses: [{ status: 200, description: 'A page of checkpoints.', schema: checkpointListSchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs/{runId}/checkpoints/{checkpointId}',
    operationId: 'getCheckpoint',
    summary: 'A checkpoint, with a signed download of the workspace then',
    tags,
    params: checkpointParams,
    responses: [{ status: 200, description: 'The checkpoint.', schema: checkpointItemSchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/runs/{runId}/fork',
    operationId: 'forkRun',
    summary: 'Fork a run from one of its checkpoints',
    description:
      "A new run of your team whose conversation is the source's up to the checkpoint's step and whose workspace starts as that checkpoint; `prompt` is its next message. Without `checkpoint_id`, the latest. The source is unchanged. 409 when the run has no checkpoint yet.",
    tags,
    params: runIdParams,
    headers: idempotencyHeaders,
    body: { schema: forkRunSchema },
    responses: [
      { status: 201, description: 'The fork was created.', schema: forkRunResponseSchema, headers: locationHeader },
    ],
    errors: [400, 403, 404, 409],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/downloads/checkpoints/{id}',
    operationId: 'downloadCheckpoint',
    summary: "Download a checkpoint's workspace",
    description:
      'The signed URL is the capability: no key is needed. A gzipped tar of the workspace at the checkpoint, under `workspace/`: files with their modes, symlinks as links.',
    tags,
    auth: false,
    params: z.object({ id: z.string().openapi({ param: { description: 'The checkpoint id.' } }) }),
    query: z.strictObject(signatureParameters),
    responses: [
      {
        status: 200,
        description: 'The archive.',
        contentType: 'application/gzip',
        schema: z.string().openapi({ format: 'binary' }),
        headers: {
          'Content-Disposition': {
            description: '`attachment`, with the file name.',
            required: true,
            schema: { type: 'string' },
          },
        },
      },
    ],
    errors: [400, 403, 404],
  });
}

/** What services/views/checkpoint-views.ts builds is what the document says. */
export type CheckpointFits = Fits<typeof checkpointItemSchema, ReturnType<typeof toCheckpointItem>>;
export type CheckpointSummaryFits = Fits<
  typeof checkpointListSchema.shape.checkpoints.element,
  ReturnType<typeof toCheckpointSummary>
>;
