import Table from 'cli-table3';
import type { Query } from '../api-client';
import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import { oneLine } from '../terminal-text';
import { shortTime } from './list';

/** The filters of `GET /audit-events`, as the command's options name them. */
export interface AuditOptions {
  action?: string;
  actor?: string;
  resource?: string;
  createdAfter?: string;
  createdBefore?: string;
  limit?: number;
  cursor?: string;
  all?: boolean;
}

interface AuditEvent {
  event_id: string;
  occurred_at: string;
  action: string;
  outcome: string;
  actor: { type: string; uid: string; key_prefix: string | null };
  resource: { type: string; id: string | null };
  client_address: string | null;
}

interface AuditPage {
  events: AuditEvent[];
  page_info: { has_next_page: boolean; next_cursor?: string };
}

function auditTable(events: AuditEvent[], color: boolean): string {
  const table = new Table({
    head: ['TIME', 'ACTION', 'OUTCOME', 'ACTOR', 'RESOURCE', 'FROM'],
    style: { head: color ? ['bold'] : [], border: color ? ['grey'] : [] },
  });
  for (const e of events) {
    const actor = `${e.actor.type} ${oneLine(e.actor.uid, 40)}${e.actor.key_prefix ? ` (${e.actor.key_prefix})` : ''}`;
    const resource = `${e.resource.type} ${oneLine(e.resource.id ?? '', 40)}`;
    table.push([shortTime(e.occurred_at), e.action, e.outcome, actor, resource, oneLine(e.client_address ?? '', 40)]);
  }
  return table.toString();
}

/** `agent-runs audit`: the team's audit log, newest first (admin keys). */
export async function auditCommand(ctx: CommandContext, options: AuditOptions): Promise<number> {
  const query: Query = {
    action: options.action,
    actor_uid: options.actor,
    resource_id: options.resource,
    created_after: options.createdAfter,
    created_before: options.createdBefore,
    limit: options.limit,
    cursor: options.cursor,
  };
  const events: AuditEvent[] = [];
  let page: AuditPage;
  for (;;) {
    page = await ctx.client.get<AuditPage>('/audit-events', query);
    events.push(...page.events);
    if (!options.all || !page.page_info.has_next_page || !page.page_info.next_cursor) break;
    query.cursor = page.page_info.next_cursor;
  }
  const { out } = ctx;
  if (out.json) {
    out.document(options.all ? { events, page_info: { has_next_page: false } } : page);
    return EXIT_CODES.ok;
  }
  if (events.length === 0) out.note('No audit events match.');
  else out.text(auditTable(events, out.color));
  if (!options.all && page.page_info.has_next_page && page.page_info.next_cursor) {
    out.note(`More events: add --cursor ${page.page_info.next_cursor} (or --all).`);
  }
  return EXIT_CODES.ok;
}
