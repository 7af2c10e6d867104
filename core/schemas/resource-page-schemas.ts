import { z } from './zod';

/** Rows a resource list returns at most per page; also its default, so that one call returns a whole realistic list. */
export const RESOURCE_PAGE_MAX = 1000;

/** `limit` and `cursor` of every resource list (environments, agents, factories, schedules, webhooks). */
export const resourcePageQuery = {
  limit: z.coerce.number().int().min(1).max(RESOURCE_PAGE_MAX).optional().openapi({
    type: 'integer',
    default: RESOURCE_PAGE_MAX,
    description: 'Items per page. Without it, one page holds the whole list of any realistic team.',
  }),
  cursor: z.string().max(2000).optional().openapi({ description: '`page_info.next_cursor` of the previous page.' }),
};

/** A resource list's query without other parameters. */
export const resourcePageQuerySchema = z.strictObject(resourcePageQuery);

/** `page_info` of a resource list. */
export const resourcePageInfoSchema = z
  .object({
    has_next_page: z.boolean(),
    next_cursor: z.string().optional().openapi({ description: 'Pass as `cursor` for the next page.' }),
  })
  .openapi('ResourcePageInfo');
