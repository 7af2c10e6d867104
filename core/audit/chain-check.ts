import { auditEventText, auditLink, type AuditEvent } from './audit-event';

/** A team's chain head: its newest link, and the last link retention pruned (seq 0, '' when none). */
export interface AuditChainHead {
  teamId: string;
  lastSeq: number;
  lastHash: string;
  prunedThroughSeq: number;
  prunedThroughHash: string;
}

export interface ChainProblem {
  teamId: string;
  seq: number;
  eventId?: string;
  problem: string;
}

/** Problems kept per team: the first few say where to look; the count says how bad. */
const PROBLEMS_KEPT = 20;

/**
 * Checks one team's chain as its events arrive in `seq` order (in pages, so a chain of any length
 * fits in memory): each event's hash covers its text and the previous link, `seq` has no gap, the
 * first event follows what retention pruned and the last is the head's. Any removed, inserted,
 * reordered or altered event breaks one of these.
 */
export class ChainCheck {
  private expectedSeq: number;
  private prevHash: string;
  private found: ChainProblem[] = [];
  problemCount = 0;
  eventCount = 0;

  constructor(private readonly head: AuditChainHead) {
    this.expectedSeq = head.prunedThroughSeq + 1;
    this.prevHash = head.prunedThroughHash;
  }

  add(event: AuditEvent): void {
    this.eventCount++;
    if (event.seq !== this.expectedSeq) {
      const gap =
        event.seq > this.expectedSeq ? `events ${this.expectedSeq}–${event.seq - 1} are missing` : 'out of order';
      this.report(event, `seq ${event.seq} where ${this.expectedSeq} was due: ${gap}`);
    }
    if (event.prevHash !== this.prevHash) this.report(event, 'its link to the event before does not match');
    if (auditLink(event.prevHash, auditEventText(event)) !== event.hash) {
      this.report(event, 'altered: its content does not match its hash');
    }
    this.expectedSeq = event.seq + 1;
    this.prevHash = event.hash;
  }

  /** The problems found, once every event has been added. */
  finish(): ChainProblem[] {
    const { lastSeq, lastHash } = this.head;
    if (this.expectedSeq - 1 !== lastSeq || this.prevHash !== lastHash) {
      this.report(
        { seq: lastSeq },
        this.expectedSeq - 1 < lastSeq
          ? `the newest events (through seq ${lastSeq}) are missing`
          : `the chain does not end at the head (seq ${lastSeq})`,
      );
    }
    return this.found;
  }

  private report(event: { seq: number; eventId?: string }, problem: string): void {
    this.problemCount++;
    if (this.found.length < PROBLEMS_KEPT) {
      this.found.push({ teamId: this.head.teamId, seq: event.seq, eventId: event.eventId, problem });
    }
  }
}
