import { z } from './zod';
import { agentConfigSchema } from './agent-config-schemas';
import { MAX_PROMPT_CHARS, MAX_TITLE_CHARS } from './run-fields';
import { resourcePageInfoSchema, resourcePageQuery } from './resource-page-schemas';

/** Request and response schemas of a run's checkpoints and forks, defined once for validation and the API description. */

const timestamp = () => z.iso.datetime({ offset: true }).openapi({ example: '2026-11-22T03:04:05.123Z' });

/** One checkpoint of a run's files, as `GET /agent/runs/{runId}/checkpoints` lists it. */
export const checkpointSummarySchema = z
  .object({
    checkpoint_id: z.uuid(),
    turn: z
      .int()
      .openapi({ description: "The turn it was taken in (0: before the run's first turn, as a fork starts)." }),
    step: z.int().openapi({ description: 'The steps of that turn it follows (0: the workspace as provisioned).' }),
    created_at: timestamp(),
    files: z.int().openapi({ description: 'Files (and directories and symlinks) of the run then.' }),
    bytes: z.int().openapi({ description: 'Their bytes.' }),
    bytes_added: z
      .int()
      .openapi({ description: 'What this checkpoint stored that no earlier checkpoint of the run had.' }),
  })
  .openapi('CheckpointSummary');

export const checkpointListSchema = z
  .object({ checkpoints: z.array(checkpointSummarySchema), page_info: resourcePageInfoSchema })
  .openapi('CheckpointList');

/** `GET /agent/runs/{runId}/checkpoints/{checkpointId}`: with the download of the workspace then. */
export const checkpointItemSchema = checkpointSummarySchema
  .extend({
    download_url: z.url().openapi({
      description:
        'Signed; the workspace at this checkpoint as `.tar.gz` (under `workspace/`), without a key until `expires_at`.',
    }),
    expires_at: timestamp(),
  })
  .openapi('Checkpoint');

export const checkpointListQuerySchema = z.strictObject(resourcePageQuery);

/** `POST /agent/runs/{runId}/fork`. */
export const forkRunSchema = z
  .strictObject({
    checkpoint_id: z
      .uuid()
      .optional()
      .openapi({ description: "The source's checkpoint to start from; the latest when absent." }),
    prompt: z
      .string()
      .max(MAX_PROMPT_CHARS)
      .optional()
      .openapi({ description: "The fork's next user message; without it, the agent is asked to continue." }),
    title: z.string().max(MAX_TITLE_CHARS).optional(),
    config: agentConfigSchema.optional().openapi({
      description: "Fields that replace the source's configuration for the fork; the rest is the source's.",
    }),
  })
  .openapi('ForkRunRequest');

export type ForkRunRequest = z.infer<typeof forkRunSchema>;

/** `forked_from` of a fork's `POST` answer and of its `RunItem`. */
export const forkedFromSchema = z
  .object({ run_id: z.uuid(), checkpoint_id: z.uuid() })
  .openapi('ForkedFrom', { description: 'The run and checkpoint this run was forked from.' });
