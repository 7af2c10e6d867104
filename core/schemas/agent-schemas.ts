import { z } from './zod';

/** `GET /agent`: the skills found in the team's environments. */
export const agentListQuerySchema = z.strictObject({
  refresh: z
    .enum(['true', 'false'])
    .optional()
    .openapi({ description: 'Accepted for the official clients; changes nothing.' }),
  repo: z.string().max(200).optional().openapi({ description: 'Only skills of that repository (`owner/repo`).' }),
  sort_by: z.enum(['name', 'last_run']).optional().openapi({ default: 'name' }),
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
