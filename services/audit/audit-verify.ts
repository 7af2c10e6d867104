import type { DataSource } from 'typeorm';
import { ChainCheck, type ChainProblem } from '../../core/audit/chain-check';
import { readAuditChainHeads, readAuditEventsAfter } from '../../db/audit-event-reads';

const PAGE = 5000;

export interface TeamChainReport {
  teamId: string;
  events: number;
  /** Problems found (the first few are listed). */
  problemCount: number;
  problems: ChainProblem[];
}

/**
 * Checks every team's chain (or one team's) from its head: read in pages of PAGE events in chain
 * order, so the whole log never sits in memory.
 */
export async function verifyAuditChains(dataSource: DataSource, teamId?: string): Promise<TeamChainReport[]> {
  const reports: TeamChainReport[] = [];
  for (const head of await readAuditChainHeads(dataSource.manager, teamId)) {
    const check = new ChainCheck(head);
    let after = head.prunedThroughSeq;
    for (;;) {
      const events = await readAuditEventsAfter(dataSource.manager, head.teamId, after, PAGE);
      for (const event of events) check.add(event);
      if (events.length < PAGE) break;
      after = events.at(-1)!.seq;
    }
    const problems = check.finish();
    reports.push({ teamId: head.teamId, events: check.eventCount, problemCount: check.problemCount, problems });
  }
  return reports;
}
