/**
 * The ticket work dispatched to a factory is for, `<source>:<id>` (`linear:REMOTE-123`), as the
 * newest official client names it: stamped on the run's `metadata` as `ticket_source` and
 * `ticket_id` (and `ticket_url`); work sent without one gets an adhoc reference of its own.
 */
export interface TicketRef {
  source: string;
  id: string;
}

/** The source of a reference minted for work sent without a ticket: `adhoc:<run id>`. */
export const ADHOC_TICKET_SOURCE = 'adhoc';

const SOURCE = /^[a-z][a-z0-9_.-]{0,31}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

export const TICKET_REF_RULE =
  'must be `<source>:<id>`, for example `linear:REMOTE-123` (the source a letter and up to 31 more of a-z, 0-9, `_`, `.`, `-`; the id not blank); omit it to mint an adhoc reference';

/** What `parseTicketRef` accepts, as an ECMAScript pattern (for the OpenAPI document). */
export const TICKET_REF_PATTERN = String.raw`^\s*[A-Za-z][A-Za-z0-9_.-]{0,31}\s*:\s*[^\u0000-\u001f\u007f]*[^\s\u0000-\u001f\u007f]\s*$`;

/** A `<source>:<id>` reference in canonical form (the source in lower case, both trimmed); undefined when it is not one. */
export function parseTicketRef(text: string): TicketRef | undefined {
  const at = text.indexOf(':');
  if (at < 0) return undefined;
  const source = text.slice(0, at).trim().toLowerCase();
  const id = text.slice(at + 1).trim();
  if (!SOURCE.test(source) || !id || CONTROL.test(id)) return undefined;
  return { source, id };
}

export function formatTicketRef(ticket: TicketRef): string {
  return `${ticket.source}:${ticket.id}`;
}

/** The reference of work sent without a ticket: the run's own id, so that it is unique and says whose it is. */
export function adhocTicket(runId: string): TicketRef {
  return { source: ADHOC_TICKET_SOURCE, id: runId };
}

/** What a run's `metadata` says of its ticket. */
export function ticketMetadata(ticket: TicketRef, url: string | undefined): Record<string, string> {
  return { ticket_source: ticket.source, ticket_id: ticket.id, ...(url ? { ticket_url: url } : {}) };
}

/** The ticket a run's `metadata` was stamped with, if any. */
export function ticketOfMetadata(metadata: Record<string, string>): TicketRef | undefined {
  const { ticket_source: source, ticket_id: id } = metadata;
  return source && id ? { source, id } : undefined;
}
