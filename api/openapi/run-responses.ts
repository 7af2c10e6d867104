import { PULL_REQUEST_STATUSES } from '../../core/pull-requests';
import { forkedFromSchema } from '../../core/schemas/checkpoint-schemas';
import { ALL_ERROR_CODES } from '../../core/error-codes';
import { RUN_SOURCES, RUN_STATES } from '../../core/run-state';
import { z } from '../../core/schemas/zod';
import type { toHandoffItem } from '../../services/views/artifact-views';
import type { RunItem } from '../../services/views/run-item';
import { pageInfoSchema, timestamp } from './common';
import type { Fits } from './fits';
import { approvalPolicySchema } from '../../core/schemas/approval-schemas';
import { deliverySchema } from '../../core/schemas/delivery-schemas';

/** Response schemas of runs (api/run-item.ts and the run routes), shared by every operation that returns one. */

const stringMap = z.record(z.string(), z.string());

/** An MCP server as responses show it: `env` and `headers` values are always `"***"`. */
export const mcpServerViewSchema = z
  .object({
    command: z.string().optional(),
    args: z.array(z.string()).optional(),
    env: stringMap.optional().openapi({ description: 'Names only: every value is `"***"`.' }),
    url: z.string().optional(),
    headers: stringMap.optional().openapi({ description: 'Names only: every value is `"***"`.' }),
  })
  .openapi('McpServerView');

const agentConfigViewFields = {
  name: z.string().optional(),
  model_id: z.string().optional(),
  base_prompt: z.string().optional(),
  environment_id: z.string().optional(),
  skill_spec: z.string().optional(),
  skills: z.array(z.string()).optional(),
  worker_host: z.string().optional(),
  mcp_servers: z.record(z.string(), mcpServerViewSchema).optional(),
  idle_timeout_minutes: z.number().int().optional(),
  max_steps: z.number().int().optional(),
  max_tokens: z.number().int().optional(),
  computer_use_enabled: z.boolean().optional(),
  approval: approvalPolicySchema.optional(),
  delivery: deliverySchema.optional(),
};

/** A run's config as responses show it: the request's, with the service's defaults filled in. */
export const resolvedAgentConfigSchema = z
  .object({ ...agentConfigViewFields, model_id: z.string(), idle_timeout_minutes: z.number().int() })
  .openapi('ResolvedAgentConfig', { description: "The request's config with the service's defaults filled in." });

/** A schedule's `agent_config` as responses show it: what the request set, MCP credentials as `"***"`. */
export const agentConfigViewSchema = z.object(agentConfigViewFields).openapi('AgentConfigView');

export const statusMessageSchema = z
  .object({
    message: z.string(),
    error_code: z.enum(ALL_ERROR_CODES).optional(),
    retryable: z.boolean().optional(),
  })
  .openapi('RunStatusMessage');

const principalSchema = z.object({
  uid: z.string(),
  display_name: z.string(),
  type: z.enum(['user', 'service_account']),
});

/** A `PULL_REQUEST` artifact's `data` (services/views/artifact-views.ts `pullRequestData`). */
export const pullRequestDataSchema = z.object({
  branch: z.string().openapi({ description: 'The branch the run pushed.' }),
  status: z.enum(PULL_REQUEST_STATUSES).openapi({
    description:
      'As the forge last said it: its webhook, or a poll where none is set up (`unknown`: the forge has not been asked yet).',
  }),
  url: z
    .string()
    .openapi({ description: "The pull request's page (canonical: `run-by-external-reference` finds it)." }),
  artifact_uid: z.uuid(),
  repository: z.string().openapi({ description: 'The repository as the run names it.' }),
  base: z.string().openapi({ description: 'The branch it merges into.' }),
  number: z.number().int().optional().openapi({ description: "The forge's number (GitLab: the merge request's iid)." }),
  status_checked_at: timestamp().optional().openapi({ description: 'When the forge last said the status.' }),
});

export const artifactItemSchema = z
  .union([
    z.object({
      artifact_type: z.literal('FILE'),
      created_at: timestamp(),
      data: z.object({
        artifact_uid: z.string(),
        filename: z.string(),
        filepath: z.string(),
        mime_type: z.string(),
        size_bytes: z.number().int(),
        description: z.string().optional(),
        title: z.string().optional(),
      }),
    }),
    z.object({
      artifact_type: z.literal('PLAN'),
      created_at: timestamp(),
      data: z.object({
        document_uid: z.string().openapi({ description: "The run's plan document: the same for every version." }),
        artifact_uid: z.string().openapi({ description: 'This version, for `GET /agent/artifacts/{uid}`.' }),
        notebook_uid: z.string(),
        title: z.string(),
        version: z.number().int(),
      }),
    }),
    z.object({
      artifact_type: z.literal('PULL_REQUEST'),
      created_at: timestamp(),
      data: pullRequestDataSchema,
    }),
    z.object({
      artifact_type: z.literal('EXTERNAL_REFERENCE'),
      created_at: timestamp(),
      data: z.object({
        reference_type: z.string().openapi({ description: 'What it is, e.g. `pull_request`, `linear_issue`.' }),
        url: z
          .string()
          .openapi({ description: 'Canonical: how `GET /agent/run-by-external-reference` finds the run.' }),
        title: z.string().optional(),
      }),
    }),
  ])
  .openapi('ArtifactItem', {
    description:
      'A file the run uploaded (`FILE`), a version of its plan (`PLAN`), a pull request it delivered (`PULL_REQUEST`), or something it reported making elsewhere (`EXTERNAL_REFERENCE`).',
  });

/** `pending_approval` of a BLOCKED run. */
export const pendingApprovalSchema = z
  .object({
    approval_id: z
      .uuid()
      .openapi({ description: 'Decide it with `POST /agent/runs/{runId}/approvals/{approval_id}`.' }),
    kind: z.enum(['tool_call', 'question']),
    tool: z
      .string()
      .optional()
      .openapi({ description: 'A waiting tool call: its tool (`run_command`, an MCP tool, ...).' }),
    arguments: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: "A waiting tool call's arguments." }),
    question: z.string().optional().openapi({ description: "The agent's question (`ask_user`)." }),
    requested_at: timestamp(),
    expires_at: timestamp().openapi({ description: 'Undecided by then, the call is denied as timed out.' }),
  })
  .openapi('PendingApproval', {
    description:
      "While the run is BLOCKED: the call of its agent that waits for a person's decision (a tool call its `config.approval` gates), or the question it asked.",
  });

export const runItemSchema = z
  .object({
    run_id: z.uuid(),
    task_id: z.uuid().openapi({ description: 'The same as `run_id`.' }),
    title: z.string(),
    prompt: z.string(),
    state: z.enum(RUN_STATES),
    created_at: timestamp(),
    updated_at: timestamp(),
    started_at: timestamp().optional(),
    session_id: z.string().optional(),
    session_link: z.url().optional().openapi({ description: 'The transcript page; set once the agent started.' }),
    conversation_id: z.string(),
    agent_config: resolvedAgentConfigSchema,
    agent_skill: z
      .union([
        z.object({ name: z.string(), description: z.string().optional(), full_path: z.string() }),
        z.object({ name: z.string().optional(), description: z.string().optional(), bundled_skill_id: z.string() }),
      ])
      .optional(),
    status_message: statusMessageSchema.optional(),
    creator: principalSchema,
    executor: principalSchema
      .extend({ type: z.literal('service_account') })
      .optional()
      .openapi({ description: 'The agent identity the run executed as.' }),
    source: z.enum(RUN_SOURCES),
    schedule: z
      .object({ schedule_id: z.string(), schedule_name: z.string(), cron_schedule: z.string() })
      .optional()
      .openapi({ description: 'Only on runs a schedule created.' }),
    metadata: stringMap,
    run_time: z.string().optional().openapi({ description: 'ISO 8601 duration, e.g. `PT2M30.5S`.' }),
    request_usage: z.object({
      total_tokens: z.number().int(),
      inference_cost_usd: z.number().optional(),
    }),
    artifacts: z.array(artifactItemSchema),
    parent_run_id: z.uuid().optional(),
    root_run_id: z
      .uuid()
      .openapi({ description: "The top-level run of this run's orchestration tree; its own id for a top-level run." }),
    factory_uid: z.string().optional(),
    finished_at: timestamp()
      .optional()
      .openapi({ description: 'When the run last reached a terminal state; absent while it works.' }),
    worker_id: z
      .string()
      .optional()
      .openapi({ description: "WORKER_ID of the worker that holds (or last held) the run's workspace." }),
    image_reference: z.string().optional().openapi({
      description:
        "The container image the run's environment named (`docker_image`, as written), once the run was provisioned on it.",
    }),
    image_digest: z.string().optional().openapi({
      description:
        'The digest (`sha256:…`) that image resolved to when the run was first provisioned: what it runs on, whatever the tag names later. Each workspace of the run says its own in the timeline (`worker_container_ready`).',
    }),
    forked_from: forkedFromSchema.optional(),
    is_run_type_cancellable: z.boolean(),
    pending_approval: pendingApprovalSchema.optional(),
  })
  .openapi('RunItem');

export const runListSchema = z.object({ runs: z.array(runItemSchema), page_info: pageInfoSchema }).openapi('RunList');

export const createRunResponseSchema = z
  .object({ run_id: z.uuid(), task_id: z.uuid(), state: z.literal('QUEUED') })
  .openapi('CreateRunResponse');

/** `POST /agent/runs/{runId}/fork`: a create's answer, with where the fork came from. */
export const forkRunResponseSchema = createRunResponseSchema
  .extend({ forked_from: forkedFromSchema })
  .openapi('ForkRunResponse');

export const followupResponseSchema = z
  .object({
    run_id: z.uuid(),
    state: z.enum(RUN_STATES),
    followup_id: z.uuid().optional().openapi({ description: 'The durable record of the follow-up.' }),
    outcome: z.enum(['live_session', 'queued_prompt', 'handoff_execution', 'queue_pending']).optional().openapi({
      description:
        '`queued_prompt`: the run had not started, the message follows its prompt; `live_session`: the working agent gets it at its next step; `handoff_execution`: the run had ended, a new turn of it continues the conversation; `queue_pending`: the run, reopened, waits for its turn to start. Absent only in answers replayed from before it was added.',
    }),
  })
  .openapi('FollowupResponse');

export const handoffAttachmentsSchema = z
  .object({
    attachments: z.array(
      z.object({
        attachment_id: z.string(),
        filename: z.string(),
        mime_type: z.string(),
        download_url: z.url().openapi({ description: 'Signed; works without a key until it expires.' }),
      }),
    ),
  })
  .openapi('HandoffAttachments');

/** What api/run-item.ts builds is what the document says a run is. */
export type RunItemFits = Fits<typeof runItemSchema, RunItem>;
export type HandoffItemFits = Fits<
  typeof handoffAttachmentsSchema,
  { attachments: ReturnType<typeof toHandoffItem>[] }
>;
