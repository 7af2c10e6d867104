import {
  adhocTicket,
  formatTicketRef,
  parseTicketRef,
  TICKET_REF_PATTERN,
  ticketMetadata,
  ticketOfMetadata,
} from '../../core/factory-tickets';

const SAMPLES: [string, string | undefined][] = [
  ['linear:REMOTE-123', 'linear:REMOTE-123'],
  [' Linear : REMOTE-123 ', 'linear:REMOTE-123'],
  ['github:acme/app#12', 'github:acme/app#12'],
  ['jira:https://x.example/browse/A-1', 'jira:https://x.example/browse/A-1'],
  ['a:\tx\n', 'a:x'],
  ['APP-123', undefined],
  [':x', undefined],
  ['linear:', undefined],
  ['linear:   ', undefined],
  ['1linear:x', undefined],
  ['lin ear:x', undefined],
  ['linear:a\u0001b', undefined],
  [`${'s'.repeat(33)}:x`, undefined],
];

test.each(SAMPLES)('%j is %j in canonical form (or no reference)', (text, canonical) => {
  const ticket = parseTicketRef(text);
  expect(ticket && formatTicketRef(ticket)).toBe(canonical);
});

test('the OpenAPI pattern accepts exactly what the parser does', () => {
  const pattern = new RegExp(TICKET_REF_PATTERN);
  for (const [text, canonical] of SAMPLES)
    expect({ text, matches: pattern.test(text) }).toEqual({ text, matches: canonical !== undefined });
});

test('a ticket is stamped on metadata and read back; an adhoc one is the run id', () => {
  const runId = '01900000-0000-7000-8000-000000000000';
  expect(ticketMetadata(adhocTicket(runId), undefined)).toEqual({ ticket_source: 'adhoc', ticket_id: runId });
  const stamped = ticketMetadata({ source: 'linear', id: 'X-1' }, 'https://t.example/X-1');
  expect(stamped).toEqual({ ticket_source: 'linear', ticket_id: 'X-1', ticket_url: 'https://t.example/X-1' });
  expect(ticketOfMetadata(stamped)).toEqual({ source: 'linear', id: 'X-1' });
  expect(ticketOfMetadata({ ticket: 'OPS-1' })).toBeUndefined();
});
