import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { agentListQuerySchema, conversationQuerySchema } from '../../core/schemas/agent-schemas';
import { z } from '../../core/schemas/zod';
import { pageInfoSchema, registerOperation, timestamp } from './common';
import { runItemSchema } from './run-responses';
import type { conversationSteps } from '../../services/views/conversation-steps';
import type { toSkillList } from '../../services/views/skill-list';
import type { Fits } from './fits';

const skillListSchema = z
  .object({
    agents: z.array(
      z.object({
        name: z.string(),
        variants: z.array(
          z.object({
            id: z.string().openapi({ description: 'The skill spec, `owner/repo:path`.' }),
            description: z.string(),
            base_prompt: z.string(),
            source: z.object({ owner: z.string(), name: z.string(), skill_path: z.string() }),
            environments: z.array(z.object({ uid: z.string(), name: z.string() })),
            last_run_timestamp: timestamp().nullable(),
            error: z.string().optional().openapi({
              description:
                'Why the SKILL.md could not be parsed (its `description` and `base_prompt` are then empty); only with `include_malformed_skills=true`.',
            }),
          }),
        ),
      }),
    ),
  })
  .openapi('SkillList');

const actionBase = { run_id: z.uuid(), created_at: timestamp() };

/** One entry of a conversation (api/conversation-actions.ts), by `kind`. */
const conversationActionSchema = z
  .union([
    z.object({
      ...actionBase,
      kind: z.literal('user_message'),
      text: z.string(),
      followup: z.boolean().optional(),
      pending: z.boolean().optional().openapi({ description: 'Recorded, not yet delivered to the agent.' }),
    }),
    z.object({
      ...actionBase,
      kind: z.literal('agent_message'),
      text: z.string(),
      tool_calls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) })),
    }),
    z.object({
      ...actionBase,
      kind: z.literal('tool_call'),
      tool: z.string(),
      input: z.record(z.string(), z.unknown()),
      output: z.string(),
      is_error: z.boolean(),
      exit_code: z.number().int().nullable().optional(),
    }),
    z.object({
      ...actionBase,
      kind: z.literal('read_skill'),
      name: z.string(),
      input: z.record(z.string(), z.unknown()),
    }),
    z.object({
      ...actionBase,
      kind: z.literal('files_changed'),
      files: z.array(z.object({ repo: z.string(), path: z.string(), diff: z.string() })),
    }),
  ])
  .openapi('ConversationAction');

const actionCategory = z.enum(['command', 'files', 'search', 'integration', 'documents', 'skill']);
const blockBase = { message_id: z.string() };

/** One turn of a run of the conversation (services/views/conversation-steps.ts). */
const conversationStepSchema = z
  .object({
    id: z.string().openapi({ description: '`{run_id}/t{turn}`.' }),
    description: z.string().optional().openapi({ description: 'The message that started the turn.' }),
    summary: z.string().optional().openapi({ description: "The agent's last answer in the turn." }),
    started_at: timestamp().optional(),
    completed_at: timestamp().optional(),
    messages: z.array(
      z.object({
        role: z.enum(['user', 'assistant', 'tool', 'system']),
        message_ids: z.array(z.string()),
        timestamp: timestamp(),
        content: z.array(
          z.union([
            z.object({ ...blockBase, type: z.literal('text'), text: z.string() }),
            z.object({
              ...blockBase,
              type: z.literal('action'),
              id: z.string(),
              category: actionCategory,
              name: z.string(),
              input: z.record(z.string(), z.unknown()),
            }),
            z.object({
              ...blockBase,
              type: z.literal('action_result'),
              action_id: z.string(),
              category: actionCategory,
              name: z.string(),
              output: z.record(z.string(), z.unknown()),
              state: z.enum(['completed', 'failed']),
            }),
            z.object({
              ...blockBase,
              type: z.literal('event'),
              name: z.string(),
              data: z.record(z.string(), z.unknown()),
            }),
          ]),
        ),
      }),
    ),
    steps: z.array(z.unknown()).openapi({ description: 'Nested work; always empty here.' }),
  })
  .openapi('ConversationStep');

const runConversationSchema = z
  .object({ conversation_id: z.string(), steps: z.array(conversationStepSchema) })
  .openapi('RunConversation');

const conversationSchema = z
  .object({
    conversation_id: z.string(),
    steps: z
      .array(conversationStepSchema)
      .optional()
      .openapi({ description: 'Every turn of the conversation, on the first page (without `cursor`).' }),
    runs: z.array(runItemSchema),
    advertised_skills: z.array(z.object({ name: z.string() }).catchall(z.unknown())),
    actions: z.array(conversationActionSchema),
    page_info: pageInfoSchema,
  })
  .openapi('Conversation');

export function registerAgentOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent',
    operationId: 'listSkills',
    summary: "List the skills in your team's environments",
    description:
      "What runs found when they provisioned each environment (a run in an environment records its repositories' SKILL.md files), grouped by name.",
    tags: ['Skills'],
    query: agentListQuerySchema,
    responses: [
      { status: 200, description: 'Skills by name, each with the places it is defined.', schema: skillListSchema },
    ],
    errors: [400],
  });

  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/conversations/{conversationId}',
    operationId: 'getConversation',
    summary: "A conversation's runs and a page of its actions",
    tags: ['Runs'],
    params: z.object({ conversationId: z.uuid().openapi({ param: { description: 'The conversation id.' } }) }),
    query: conversationQuerySchema,
    responses: [{ status: 200, description: 'The conversation.', schema: conversationSchema }],
    errors: [400, 404],
  });

  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs/{runId}/conversation',
    operationId: 'getRunConversation',
    summary: "The run's conversation, turn by turn",
    description: 'Every run of the conversation the run serves, each turn a step of messages and tool calls.',
    tags: ['Runs'],
    params: z.object({ runId: z.uuid().openapi({ param: { description: 'The run id.' } }) }),
    responses: [{ status: 200, description: 'The conversation.', schema: runConversationSchema }],
    errors: [400, 404],
  });
}

export type ConversationStepFits = Fits<typeof conversationStepSchema, ReturnType<typeof conversationSteps>[number]>;

export type SkillListFits = Fits<typeof skillListSchema, ReturnType<typeof toSkillList>>;
