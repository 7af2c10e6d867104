import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  createRunSchema,
  factoryDispatchSchema,
  followupSchema,
  listRunsQuerySchema,
} from '../../core/schemas/run-schemas';
import { z } from '../../core/schemas/zod';
import { approvalDecisionSchema } from '../../core/schemas/approval-schemas';
import { harnessUsageResponseSchema } from '../../core/schemas/harness-usage-schemas';
import { idempotencyHeaders, linksTo, locationHeader, registerOperation, type Operation } from './common';
import {
  createRunResponseSchema,
  followupResponseSchema,
  handoffAttachmentsSchema,
  runItemSchema,
  runListSchema,
} from './run-responses';

const tags = ['Runs'];

/** From a created run to what can be done with it. */
const RUN_LINKS = linksTo('/run_id', 'runId', ['getRun', 'listHandoffAttachments', 'sendFollowup', 'cancelRun']);

/** From a run to its conversation, its session and its first artifact. */
const RUN_ITEM_LINKS = {
  ...linksTo('/conversation_id', 'conversationId', ['getConversation', 'conversationRedirect']),
  ...linksTo('/session_id', 'sessionId', ['sessionRedirect', 'getTranscriptPage']),
  ...linksTo('/artifacts/0/data/artifact_uid', 'artifactUid', ['getArtifact']),
};

export const runIdParams = z.object({
  runId: z.uuid().openapi({ param: { description: 'The run id.' }, example: '01936f1e-8b0a-7c3e-9d52-4f6a1b2c3d4e' }),
});

/** `POST /agent/runs` and its older name `POST /agent/run`: the same operation. */
function createRun(path: string, operationId: string, deprecated: boolean): Operation {
  return {
    method: 'post',
    path,
    operationId,
    summary: deprecated ? 'Create a run (older path)' : 'Create a run',
    deprecated,
    description:
      'Records the run and starts its workflow; the agent starts asynchronously. With `Idempotency-Key`, a retry with the same body returns the first response and starts nothing.',
    tags,
    headers: idempotencyHeaders,
    body: { schema: createRunSchema },
    responses: [
      {
        status: 201,
        description: 'The run was created (or, with the same `Idempotency-Key` and body, had been).',
        schema: createRunResponseSchema,
        headers: locationHeader,
        links: RUN_LINKS,
      },
    ],
    errors: [400, 403, 404, 409],
  };
}

export function registerRunOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, createRun('/api/v1/agent/runs', 'createRun', false));
  registerOperation(registry, createRun('/api/v1/agent/run', 'createRunLegacy', true));

  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs',
    operationId: 'listRuns',
    summary: 'List runs',
    description: "The team's runs, newest update first by default; filters combine with AND.",
    tags,
    query: listRunsQuerySchema,
    responses: [{ status: 200, description: 'A page of runs.', schema: runListSchema }],
    errors: [400],
  });

  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs/{runId}',
    operationId: 'getRun',
    summary: 'Get a run',
    tags,
    params: runIdParams,
    responses: [{ status: 200, description: 'The run.', schema: runItemSchema, links: RUN_ITEM_LINKS }],
    errors: [400, 404],
  });

  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/agent/runs/{runId}',
    operationId: 'deleteRun',
    summary: 'Delete a run',
    description:
      'Admin keys. Deletes an ended run and its descendants with everything they left: transcript, conversation, follow-ups, artifacts, attachments, handoff files, checkpoints and their workflow histories in Temporal; the run and its download URLs are 404 afterwards. A run (or descendant) that is still live is 409: cancel it first.',
    tags,
    params: runIdParams,
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: [400, 403, 404, 409],
  });

  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs/{runId}/harness-usage',
    operationId: 'getHarnessUsage',
    summary: "What a run's CLI harness reported it used",
    description:
      "Claude Code's and Codex's own cumulative token counters and tool calls over the run's invocations. `available` is false for runs of this service's own loop, of Gemini CLI (no usage envelope), and before the CLI's first report; `request_usage` on the run counts tokens for every harness.",
    tags,
    params: runIdParams,
    responses: [
      { status: 200, description: 'The snapshot, or `available: false`.', schema: harnessUsageResponseSchema },
    ],
    errors: [400, 404],
  });

  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs/{runId}/handoff/attachments',
    operationId: 'listHandoffAttachments',
    summary: "The files of a run's latest ended turn",
    description: 'Files that let the work continue elsewhere, each with a signed download URL.',
    tags,
    params: runIdParams,
    responses: [
      { status: 200, description: 'The files (none before a turn ended).', schema: handoffAttachmentsSchema },
    ],
    errors: [400, 404],
  });

  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/runs/{runId}/followups',
    operationId: 'sendFollowup',
    summary: 'Send a follow-up',
    description:
      'Recorded durably before the answer; delivered exactly once, in order. A run in a terminal state continues in the same conversation (back to `QUEUED`).',
    tags,
    params: runIdParams,
    headers: idempotencyHeaders,
    body: { schema: followupSchema },
    responses: [{ status: 200, description: 'The follow-up was recorded.', schema: followupResponseSchema }],
    errors: [400, 404, 409],
  });

  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/conversations/{conversationId}/followups',
    operationId: 'sendConversationFollowup',
    summary: "Send a follow-up to a conversation's newest run",
    description: 'As `POST /agent/runs/{runId}/followups`, to the newest run of the conversation; `run_id` names it.',
    tags,
    params: z.object({ conversationId: z.uuid().openapi({ param: { description: 'The conversation id.' } }) }),
    headers: idempotencyHeaders,
    body: { schema: followupSchema },
    responses: [{ status: 200, description: 'The follow-up was recorded.', schema: followupResponseSchema }],
    errors: [400, 404, 409],
  });

  const interruptDescription =
    "Stops the turn in progress — the model call or the command in flight — without ending the run: the turn ends `SUCCEEDED` with a status message saying it was interrupted, the workspace stays for the run's idle window, and the next follow-up continues the conversation. Durable once answered (a signal of the run's workflow). A run that is not `INPROGRESS` is 400 `operation_not_supported`.";
  const interruptBody = {
    schema: z.strictObject({}).openapi({ description: 'No fields; the body may be omitted.' }),
    required: false,
  };
  const interruptAccepted = z.object({ run_id: z.uuid() }).openapi('InterruptAccepted');
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/runs/{runId}/interrupt',
    operationId: 'interruptRun',
    summary: "Interrupt the run's current turn",
    description: interruptDescription,
    tags,
    params: runIdParams,
    body: interruptBody,
    responses: [{ status: 202, description: 'The interrupt was accepted.', schema: interruptAccepted }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/conversations/{conversationId}/interrupt',
    operationId: 'interruptConversation',
    summary: "Interrupt the current turn of a conversation's newest run",
    description: `As \`POST /agent/runs/{runId}/interrupt\`, to the newest run of the conversation; \`run_id\` names it. ${interruptDescription}`,
    tags,
    params: z.object({ conversationId: z.uuid().openapi({ param: { description: 'The conversation id.' } }) }),
    body: interruptBody,
    responses: [{ status: 202, description: 'The interrupt was accepted.', schema: interruptAccepted }],
    errors: [400, 404],
  });

  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/runs/{runId}/cancel',
    operationId: 'cancelRun',
    summary: 'Cancel a run',
    description:
      'The run reaches `CANCELLED` within seconds. Cancelling a run that has ended is 400 `operation_not_supported`; cancelling again while cancellation is under way is 200.',
    tags,
    params: runIdParams,
    body: {
      schema: z.strictObject({}).openapi({ description: 'No fields; the body may be omitted.' }),
      required: false,
    },
    responses: [
      {
        status: 200,
        description: 'Cancellation was requested; the body is the run id.',
        contentType: 'text/plain',
        schema: z.uuid(),
      },
    ],
    errors: [400, 404, 409],
  });

  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/runs/{runId}/approvals/{approvalId}',
    operationId: 'decideApproval',
    summary: "Approve or deny a blocked run's waiting call",
    description:
      "Decides the call a `BLOCKED` run waits on (`pending_approval` of the run). `approve`: the call runs (for a question, `comment` is the answer). `deny`: the model is told it was denied, by whom, and the comment. Who decided, when and why is recorded in the run's transcript (an `approval` entry) and the audit log (`approval.decide`). Admin keys; member keys only where APPROVALS_MEMBERS_MAY_DECIDE=true; an agent key never decides its own run's calls (403). An approval no longer pending (decided, timed out, cancelled) is 409.",
    tags,
    params: runIdParams.extend({
      approvalId: z.uuid().openapi({ param: { description: 'The approval (`pending_approval.approval_id`).' } }),
    }),
    body: { schema: approvalDecisionSchema },
    responses: [{ status: 200, description: 'Decided; the run as it is now.', schema: runItemSchema }],
    errors: [400, 403, 404, 409],
  });

  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/factories/{uid}/runs',
    operationId: 'dispatchToFactory',
    summary: "Create a run of a factory's foreman",
    description: 'As `POST /agent/runs` with the foreman as `agent_identity_uid`.',
    tags: ['Factories'],
    params: z.object({ uid: z.string().openapi({ param: { description: 'The factory uid.' } }) }),
    headers: idempotencyHeaders,
    body: { schema: factoryDispatchSchema },
    responses: [
      {
        status: 201,
        description: 'The run was created.',
        schema: createRunResponseSchema,
        headers: locationHeader,
        links: RUN_LINKS,
      },
    ],
    errors: [400, 403, 404, 409],
  });
}
