import { createHash } from 'node:crypto';
import { isUuid } from '../core/ids';
import { RUN_SOURCES, RUN_STATES, TASK_STATUSES } from '../core/run-state';
import { ARTIFACT_TYPES, type ArtifactType } from '../db/artifact-reads';
import type { RunFilters, RunSortField, SortOrder } from '../db/run-reads';
import { invalid } from '../core/api-error';
import { unknownQueryParameter } from './validate';
import {
  cursorNotIssued,
  decodeOpaqueCursor,
  encodeOpaqueCursor,
  parseLimit,
  singleQueryParameter as single,
} from './page-params';
import {
  CLIENT_ONLY_STATES,
  LIST_RUNS_DEFAULT_LIMIT,
  LIST_RUNS_MAX_LIMIT,
  listRunsQuerySchema,
  MAX_METADATA_FILTERS,
  RUN_SORT_FIELDS,
  skillSpecSchema,
} from '../core/schemas/run-schemas';

type Query = Record<string, string | string[] | undefined>;

export interface ListRunsQuery {
  filters: RunFilters;
  sortBy: RunSortField;
  sortOrder: SortOrder;
  limit: number;
  after?: { value: string; runId: string };
}

/** Parameters given at most once: all of the documented query but the repeatable `state` and the `metadata[KEY]` pairs. */
const REPEATABLE_PARAMS = ['state', 'task_status'];
const SINGLE_PARAMS = Object.keys(listRunsQuerySchema.shape).filter(
  (name) => !REPEATABLE_PARAMS.includes(name) && name !== 'metadata',
);
const SORT_FIELDS: readonly RunSortField[] = RUN_SORT_FIELDS;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
const METADATA_PARAM = /^metadata\[([a-zA-Z0-9._-]{1,64})\]$/;

/** True for a real calendar date and time of day: `Date` would roll 2026-02-31 or 24:00 over to the next day. */
function isRealDateTime(value: string): boolean {
  const [, y, mo, d, h] = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})/i.exec(value) ?? [];
  const day = new Date(0);
  day.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  return day.getUTCMonth() === Number(mo) - 1 && day.getUTCDate() === Number(d) && Number(h) <= 23;
}

function timestamp(query: Query, name: string): Date | undefined {
  const value = single(query, name);
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (!RFC3339.test(value) || Number.isNaN(date.getTime()) || !isRealDateTime(value)) {
    throw invalid(
      `Query parameter \`${name}\` must be an RFC 3339 timestamp such as 2026-11-22T03:04:05.123Z (got "${value}").`,
    );
  }
  return date;
}

/** A repeatable parameter's values (`state=A&state=B`), each one of `allowed`; undefined when absent. */
function repeated<T extends string>(query: Query, name: string, allowed: readonly T[]): T[] | undefined {
  const raw = query[name];
  const values = raw === undefined ? undefined : Array.isArray(raw) ? raw : [raw];
  for (const value of values ?? []) {
    if (!(allowed as readonly string[]).includes(value)) {
      throw invalid(`Query parameter \`${name}\` must be one of ${allowed.join(', ')} (got "${value}").`);
    }
  }
  return values as T[] | undefined;
}

/** Validates the list query (unknown parameters are rejected) and decodes the cursor. */
export function parseListRunsQuery(query: Query): ListRunsQuery {
  const metadataPairs: [string, string][] = [];
  for (const key of Object.keys(query)) {
    // PostgreSQL text cannot hold NUL: refuse it here rather than fail the query with a 500.
    if ([query[key]].flat().some((v) => v?.includes('\u0000'))) {
      throw invalid(`Query parameter \`${key}\` may not contain the NUL character.`);
    }
    const m = METADATA_PARAM.exec(key);
    if (m) {
      metadataPairs.push([m[1]!, single(query, key) ?? '']);
      continue;
    }
    if (!REPEATABLE_PARAMS.includes(key) && !SINGLE_PARAMS.includes(key)) {
      throw invalid(
        key.startsWith('metadata')
          ? `Query parameter \`${key}\` must look like metadata[KEY]=VALUE with KEY matching [a-zA-Z0-9._-]{1,64}.`
          : unknownQueryParameter(key, [...REPEATABLE_PARAMS, ...SINGLE_PARAMS]).detail,
      );
    }
  }
  // Sorted, so that the cursor fingerprint does not depend on parameter order; fromEntries
  // defines own properties, so a key such as `__proto__` filters instead of being dropped.
  const metadata: Record<string, string> = Object.fromEntries(
    metadataPairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  if (Object.keys(metadata).length > MAX_METADATA_FILTERS) {
    throw invalid(`At most ${MAX_METADATA_FILTERS} metadata[KEY]=VALUE filters may be combined.`);
  }

  const limit = parseLimit(query, LIST_RUNS_DEFAULT_LIMIT, LIST_RUNS_MAX_LIMIT);

  const states = repeated(query, 'state', [...RUN_STATES, ...CLIENT_ONLY_STATES]);
  const taskStatuses = repeated(query, 'task_status', TASK_STATUSES);

  const source = single(query, 'source');
  if (source !== undefined && !(RUN_SOURCES as readonly string[]).includes(source)) {
    throw invalid(`Query parameter \`source\` must be one of ${RUN_SOURCES.join(', ')} (got "${source}").`);
  }
  const skillSpec = single(query, 'skill_spec') ?? single(query, 'skill');
  if (skillSpec !== undefined && !skillSpecSchema.safeParse(skillSpec).success) {
    throw invalid(
      `Query parameter \`skill_spec\` must be \`owner/repo:skill-name\` or \`owner/repo:path/to/SKILL.md\` (got "${skillSpec}").`,
    );
  }
  const artifactType = single(query, 'artifact_type');
  if (artifactType !== undefined && !(ARTIFACT_TYPES as readonly string[]).includes(artifactType)) {
    throw invalid(
      `Query parameter \`artifact_type\` must be one of ${ARTIFACT_TYPES.join(', ')} (got "${artifactType}").`,
    );
  }
  const sortBy = (single(query, 'sort_by') ?? 'updated_at') as RunSortField;
  if (!SORT_FIELDS.includes(sortBy)) {
    throw invalid(`Query parameter \`sort_by\` must be one of ${SORT_FIELDS.join(', ')} (got "${sortBy}").`);
  }
  const sortOrder = (single(query, 'sort_order') ?? 'desc') as SortOrder;
  if (sortOrder !== 'asc' && sortOrder !== 'desc') {
    throw invalid(`Query parameter \`sort_order\` must be asc or desc (got "${sortOrder}").`);
  }
  const q = single(query, 'q');
  if (q !== undefined && q.length > 1000) throw invalid('Query parameter `q` is at most 1000 characters.');
  const environment = single(query, 'environment_id');

  const filters: RunFilters = {
    states,
    taskStatuses,
    name: single(query, 'name'),
    modelId: single(query, 'model_id'),
    creator: single(query, 'creator'),
    source,
    environmentId: environment === 'empty-environment' ? null : environment,
    skillSpec,
    createdAfter: timestamp(query, 'created_after'),
    createdBefore: timestamp(query, 'created_before'),
    updatedAfter: timestamp(query, 'updated_after'),
    q,
    metadata: Object.keys(metadata).length ? metadata : undefined,
    scheduleId: single(query, 'schedule_id'),
    artifactType: artifactType as ArtifactType | undefined,
    ancestorRunId: single(query, 'ancestor_run_id'),
    factoryUid: single(query, 'factory_uid'),
  };
  const fingerprint = filterFingerprint(filters, sortBy, sortOrder);
  const cursor = single(query, 'cursor');
  return {
    filters,
    sortBy,
    sortOrder,
    limit,
    after: cursor === undefined ? undefined : decodeCursor(cursor, fingerprint, sortBy),
  };
}

function filterFingerprint(filters: RunFilters, sortBy: string, sortOrder: string): string {
  const canonical = JSON.stringify({
    ...filters,
    states: filters.states ? [...filters.states].sort() : undefined,
    taskStatuses: filters.taskStatuses ? [...new Set(filters.taskStatuses)].sort() : undefined,
    sortBy,
    sortOrder,
  });
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

interface CursorPayload {
  v: string;
  id: string;
  f: string;
}

export function encodeCursor(query: ListRunsQuery, last: { value: string; runId: string }): string {
  const payload: CursorPayload = {
    v: last.value,
    id: last.runId,
    f: filterFingerprint(query.filters, query.sortBy, query.sortOrder),
  };
  return encodeOpaqueCursor(payload);
}

/** Issued cursors of the time sorts hold `Date#toISOString()` of a stored timestamp, nothing else. */
function isIssuedTimestamp(value: string): boolean {
  const date = new Date(value);
  if (Number.isNaN(date.getTime()) || date.toISOString() !== value) return false;
  // PostgreSQL reads neither year 0 nor the expanded years (+010000-…) of toISOString.
  return date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999;
}

function decodeCursor(cursor: string, fingerprint: string, sortBy: RunSortField): { value: string; runId: string } {
  const payload = decodeOpaqueCursor(cursor) as Partial<CursorPayload>;
  if (typeof payload.v !== 'string' || typeof payload.id !== 'string' || !isUuid(payload.id)) {
    throw cursorNotIssued();
  }
  if (payload.f !== fingerprint) {
    throw invalid(
      'Query parameter `cursor` was issued for other filters or another sort; repeat the same filters with it, or start without a cursor.',
    );
  }
  // The value is compared in SQL as a timestamptz (time sorts) or text: a forged one must not reach it.
  const textSort = sortBy === 'title' || sortBy === 'agent';
  if (textSort ? payload.v.includes('\u0000') : !isIssuedTimestamp(payload.v)) throw cursorNotIssued();
  return { value: payload.v, runId: payload.id };
}
