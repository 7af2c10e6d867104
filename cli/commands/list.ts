import Table from 'cli-table3';
import type { Query } from '../api-client';
import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import { oneLine } from '../terminal-text';
import type { ListRunsResponse, RunItem } from '../wire';

/** The filters of `GET /agent/runs`, as the command's options name them. */
export interface ListOptions {
  state?: string[];
  taskStatus?: string[];
  name?: string;
  model?: string;
  creator?: string;
  source?: string;
  env?: string;
  skill?: string;
  schedule?: string;
  ancestor?: string;
  factory?: string;
  artifactType?: string;
  createdAfter?: string;
  createdBefore?: string;
  updatedAfter?: string;
  q?: string;
  metadata?: Record<string, string>;
  sortBy?: string;
  sortOrder?: string;
  limit?: number;
  cursor?: string;
  all?: boolean;
}

/** The list query for the options; the API validates every value and says what it wants. */
export function listQuery(options: ListOptions): Query {
  const query: Query = {
    state: options.state,
    task_status: options.taskStatus,
    name: options.name,
    model_id: options.model,
    creator: options.creator,
    source: options.source,
    environment_id: options.env,
    skill_spec: options.skill,
    schedule_id: options.schedule,
    ancestor_run_id: options.ancestor,
    factory_uid: options.factory,
    artifact_type: options.artifactType,
    created_after: options.createdAfter,
    created_before: options.createdBefore,
    updated_after: options.updatedAfter,
    q: options.q,
    sort_by: options.sortBy,
    sort_order: options.sortOrder,
    limit: options.limit,
    cursor: options.cursor,
  };
  for (const [key, value] of Object.entries(options.metadata ?? {})) query[`metadata[${key}]`] = value;
  return query;
}

/** `2026-11-23T10:04:05.123Z` as `2026-11-23 10:04:05Z`: short, still UTC and sortable. */
export const shortTime = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

export function runsTable(runs: RunItem[], color: boolean): string {
  const table = new Table({
    head: ['ID', 'STATE', 'TITLE', 'CREATED', 'UPDATED'],
    style: { head: color ? ['bold'] : [], border: color ? ['grey'] : [] },
  });
  for (const run of runs) {
    table.push([run.run_id, run.state, oneLine(run.title, 48), shortTime(run.created_at), shortTime(run.updated_at)]);
  }
  return table.toString();
}

/** `agent-runs list`: a page of runs (every page with `--all`) as a table. */
export async function listCommand(ctx: CommandContext, options: ListOptions): Promise<number> {
  const query = listQuery(options);
  const runs: RunItem[] = [];
  let page: ListRunsResponse;
  for (;;) {
    page = await ctx.client.get<ListRunsResponse>('/agent/runs', query);
    runs.push(...page.runs);
    if (!options.all || !page.page_info.has_next_page || !page.page_info.next_cursor) break;
    query.cursor = page.page_info.next_cursor;
  }
  const { out } = ctx;
  if (out.json) {
    out.document(options.all ? { runs, page_info: { has_next_page: false } } : page);
    return EXIT_CODES.ok;
  }
  if (runs.length === 0) out.note('No runs match.');
  else out.text(runsTable(runs, out.color));
  if (!options.all && page.page_info.has_next_page && page.page_info.next_cursor) {
    out.note(`More runs: add --cursor ${page.page_info.next_cursor} (or --all).`);
  }
  return EXIT_CODES.ok;
}
