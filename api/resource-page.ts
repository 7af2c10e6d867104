import { isKeysetPosition, type KeysetOrder, type KeysetPage, type ResourcePageRequest } from '../db/keyset-reads';
import type { Context } from 'koa';
import { invalid } from '../core/api-error';
import { principalOf } from './middleware/auth';
import { cursorNotIssued, decodeOpaqueCursor, encodeOpaqueCursor } from './page-params';
import { RESOURCE_PAGE_MAX, resourcePageQuerySchema } from '../core/schemas/resource-page-schemas';
import { validate } from './validate';

export type { ResourcePageRequest } from '../db/keyset-reads';

/**
 * The page a validated `limit` and `cursor` ask for, of a list in `order` named `sort` (a cursor
 * issued for another sort is refused).
 */
export function resourcePageOf(
  query: { limit?: number; cursor?: string },
  sort: string,
  order: KeysetOrder,
): ResourcePageRequest {
  const limit = query.limit ?? RESOURCE_PAGE_MAX;
  if (query.cursor === undefined) return { limit };
  const payload = decodeOpaqueCursor(query.cursor);
  if (typeof payload.v !== 'string' || typeof payload.k !== 'string' || typeof payload.s !== 'string') {
    throw cursorNotIssued();
  }
  if (payload.s !== sort) {
    throw invalid(
      `Query parameter \`cursor\` was issued for \`sort_by=${payload.s}\`; repeat that sort with it, or start without a cursor.`,
    );
  }
  const after = { value: payload.v, key: payload.k };
  if (!isKeysetPosition(order, after)) throw cursorNotIssued();
  return { limit, after };
}

/** The `page_info` of a page read for `resourcePageOf`'s request. */
export function resourcePageInfo(page: KeysetPage<unknown>, sort: string) {
  return {
    has_next_page: page.next !== undefined,
    ...(page.next ? { next_cursor: encodeOpaqueCursor({ s: sort, v: page.next.value, k: page.next.key }) } : {}),
  };
}

/**
 * A page of a list without filters or sorts of its own (`limit` and `cursor` only), in `order`,
 * read by `read` for the caller's team.
 */
export async function readResourcePage<T>(
  ctx: Context,
  order: KeysetOrder,
  read: (teamId: string, page: ResourcePageRequest) => Promise<KeysetPage<T>>,
) {
  const query = validate(resourcePageQuerySchema, ctx.query, 'query');
  const page = await read(principalOf(ctx.state).teamId, resourcePageOf(query, order.column, order));
  return { rows: page.rows, page_info: resourcePageInfo(page, order.column) };
}
