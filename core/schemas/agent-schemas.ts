import { REPOSITORY_PATTERN } from './environment-schemas';
import { z } from './zod';

const flag = (description: string) => z.enum(['true', 'false']).optional().openapi({ default: 'false', description });

/** `GET /agent`: the skills found in the team's environments. */
export const agentListQuerySchema = z.strictObject({
  include_malformed_skills: flag(
    'Also list the SKILL.md files that were found but could not be parsed, each variant with its `error`.',
  ),
  refresh: flag(
    'Accepted: this service keeps no cache of the list; every answer is read afresh from what runs last found when they provisioned each environment.',
  ),
  repo: z
    .string()
    .regex(REPOSITORY_PATTERN, 'must be `owner/repo`')
    .optional()
    .openapi({ description: 'Only skills of that repository (`owner/repo`, any case).' }),
  sort_by: z
    .enum(['name', 'last_run'])
    .optional()
    .openapi({ default: 'name', description: '`name` (A to Z), or `last_run`: the skill your team ran last first.' }),
});

export const CONVERSATION_PAGE_DEFAULT = 200;
export const CONVERSATION_PAGE_MAX = 500;

/** `GET /agent/conversations/{id}`: api/conversation-query.ts parses it and accepts exactly these parameters. */
export const conversationQuerySchema = z.strictObject({
  limit: z
    .number()
    .int()
    .min(1)
    .max(CONVERSATION_PAGE_MAX)
    .optional()
    .openapi({ default: CONVERSATION_PAGE_DEFAULT, description: 'Actions per page.' }),
  cursor: z.string().optional().openapi({ description: '`page_info.next_cursor` of the previous page.' }),
});

/** `GET /agent/run-by-external-reference`. */
export const externalReferenceQuerySchema = z.strictObject({
  url: z.string().max(4096).openapi({ description: 'The URL a run reported (compared in canonical form).' }),
});
