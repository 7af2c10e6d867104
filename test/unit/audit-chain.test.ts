import { ROUTE_AUDITS } from '../../api/audit-actions';
import { openApiDocument, openApiLimits } from '../../api/openapi/document';
import { auditEventText, auditLink, type AuditEvent, type AuditRecord } from '../../core/audit/audit-event';
import { ChainCheck, type AuditChainHead } from '../../core/audit/chain-check';
import { loadConfig } from '../../core/config';

const TEAM = '0192f0c0-0000-7000-8000-000000000001';

function record(n: number): AuditRecord {
  return {
    teamId: TEAM,
    action: 'run.cancel',
    outcome: 'success',
    actor: { type: 'user', uid: `user-${n}`, keyPrefix: 'ark_abcdefgh' },
    resource: { type: 'run', id: `run-${n}` },
    requestId: `req-${n}`,
    clientAddress: '127.0.0.1',
    details: { n, note: 'x' },
  };
}

/** A chain of `count` events linked as PostgreSQL links them (db/audit-events.ts). */
function chain(count: number): AuditEvent[] {
  const events: AuditEvent[] = [];
  let prevHash = '';
  for (let seq = 1; seq <= count; seq++) {
    const base = { ...record(seq), eventId: `e-${seq}`, occurredAt: new Date(Date.UTC(2026, 11, 1, 0, 0, seq)) };
    const hash = auditLink(prevHash, auditEventText(base));
    events.push({ ...base, seq, prevHash, hash });
    prevHash = hash;
  }
  return events;
}

function headOf(events: AuditEvent[], pruned = 0): AuditChainHead {
  const last = events.at(-1)!;
  const prunedEvent = pruned > 0 ? events[pruned - 1]! : undefined;
  return {
    teamId: TEAM,
    lastSeq: last.seq,
    lastHash: last.hash,
    prunedThroughSeq: prunedEvent?.seq ?? 0,
    prunedThroughHash: prunedEvent?.hash ?? '',
  };
}

function check(head: AuditChainHead, events: AuditEvent[]) {
  const c = new ChainCheck(head);
  for (const e of events) c.add(e);
  return c.finish().map((p) => `${p.seq}: ${p.problem}`);
}

describe('the hash chain', () => {
  test('an intact chain has no problem, from its start or from where retention pruned it', () => {
    const events = chain(6);
    expect(check(headOf(events), events)).toEqual([]);
    expect(check(headOf(events, 3), events.slice(3))).toEqual([]);
  });

  test('an event whose content was altered is found', () => {
    const events = chain(5);
    const altered = events.map((e) => (e.seq === 3 ? { ...e, actor: { ...e.actor, uid: 'someone-else' } } : e));
    expect(check(headOf(events), altered)).toEqual(['3: altered: its content does not match its hash']);
  });

  test('an altered event re-hashed in place breaks the link of the one after it', () => {
    const events = chain(5);
    const forged = { ...events[2]!, details: { n: 3, note: 'forged' } };
    forged.hash = auditLink(forged.prevHash, auditEventText(forged));
    const problems = check(headOf(events), [...events.slice(0, 2), forged, ...events.slice(3)]);
    expect(problems).toEqual(['4: its link to the event before does not match']);
  });

  test('a removed event, the newest, or the oldest (without retention recording it) is found', () => {
    const events = chain(5);
    expect(
      check(
        headOf(events),
        events.filter((e) => e.seq !== 3),
      ),
    ).toEqual(['4: seq 4 where 3 was due: events 3–3 are missing', '4: its link to the event before does not match']);
    expect(check(headOf(events), events.slice(0, 4))).toEqual(['5: the newest events (through seq 5) are missing']);
    expect(check(headOf(events), events.slice(1))).toEqual([
      '2: seq 2 where 1 was due: events 1–1 are missing',
      '2: its link to the event before does not match',
    ]);
  });

  test("the text an event's hash covers does not depend on the order of its details' keys", () => {
    const [event] = chain(1);
    const reordered = { ...event!, details: { note: 'x', n: 1 } };
    expect(auditEventText(reordered)).toBe(auditEventText(event!));
  });
});

describe('what the API records', () => {
  test('every operation that changes something is an audited action, or named as changing nothing', () => {
    const document = openApiDocument(openApiLimits(loadConfig({})));
    const changing = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item as object)
        .filter((method) => ['post', 'put', 'patch', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    // The open routes (no key) have no team to record in: factory-file validation changes nothing;
    // a forge's webhook is recorded as the run's `pull_request` event.
    const apiRoutes = changing.filter(
      (route) =>
        route.includes(' /api/v1/') && !route.includes('/factory-files/') && !route.includes('/forge-webhooks/'),
    );
    expect(apiRoutes.length).toBeGreaterThan(30);
    expect(apiRoutes.filter((route) => !(route in ROUTE_AUDITS))).toEqual([]);
    expect(Object.keys(ROUTE_AUDITS).filter((route) => !apiRoutes.includes(route))).toEqual([]);
  });
});
