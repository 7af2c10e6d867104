import { invalid } from '../core/api-error';
import { rejectQueryParameters } from './validate';
import {
  cursorNotIssued,
  decodeOpaqueCursor,
  encodeOpaqueCursor,
  parseLimit,
  singleQueryParameter,
} from './page-params';
import {
  CONVERSATION_PAGE_DEFAULT,
  CONVERSATION_PAGE_MAX,
  conversationQuerySchema,
} from '../core/schemas/agent-schemas';

const PARAMETERS = Object.keys(conversationQuerySchema.shape);

type Query = Record<string, string | string[] | undefined>;

/** Where a page of a conversation's actions ends: after one of a run's events, or after one of its pending follow-ups (its events all shown). */
export type ActionPosition = { runId: string; afterEventId: string } | { runId: string; afterSeq: number };

export interface ConversationQuery {
  limit: number;
  after?: ActionPosition;
}

interface CursorPayload {
  c: string;
  r: string;
  e?: string;
  s?: number;
}

/** Validates `limit` and `cursor` (other parameters are rejected) of `GET /agent/conversations/{id}`. */
export function parseConversationQuery(query: Query, conversationId: string): ConversationQuery {
  rejectQueryParameters(query, PARAMETERS);
  const limit = parseLimit(query, CONVERSATION_PAGE_DEFAULT, CONVERSATION_PAGE_MAX);
  const cursor = singleQueryParameter(query, 'cursor');
  return { limit, after: cursor === undefined ? undefined : decodeActionCursor(cursor, conversationId) };
}

export function encodeActionCursor(conversationId: string, position: ActionPosition): string {
  const payload: CursorPayload =
    'afterEventId' in position
      ? { c: conversationId, r: position.runId, e: position.afterEventId }
      : { c: conversationId, r: position.runId, s: position.afterSeq };
  return encodeOpaqueCursor(payload);
}

function decodeActionCursor(cursor: string, conversationId: string): ActionPosition {
  const payload = decodeOpaqueCursor(cursor) as Partial<CursorPayload>;
  if (typeof payload.c !== 'string' || typeof payload.r !== 'string') throw cursorNotIssued();
  if (payload.c !== conversationId) {
    throw invalid(
      'Query parameter `cursor` was issued for another conversation; use it with that conversation, or start without a cursor.',
    );
  }
  // Compared in SQL as a bigint and an integer: a forged value must not reach the query.
  if (typeof payload.e === 'string' && /^\d{1,18}$/.test(payload.e) && payload.s === undefined) {
    return { runId: payload.r, afterEventId: payload.e };
  }
  if (Number.isSafeInteger(payload.s) && payload.s! >= 0 && payload.s! <= 2 ** 31 - 1 && payload.e === undefined) {
    return { runId: payload.r, afterSeq: payload.s! };
  }
  throw cursorNotIssued();
}
