import type { DataSource } from 'typeorm';
import type { AuditActor, AuditEvent, AuditRecord } from '../../core/audit/audit-event';
import { newUuidV7 } from '../../core/ids';
import type { Logger } from '../../core/logger';
import { auditEventsNotStored, auditEventsRecorded } from '../../core/metrics';
import { appendAuditEvent } from '../../db/audit-events';
import { auditEventItem } from './audit-event-item';

/** Records what happened: the one writer of the audit log, for the API, the CLI and the service. */
export interface AuditLog {
  /**
   * Appends the event to its team's chain and logs it (`msg: "audit event"`, the event under
   * `audit`, `team_id` beside it) for a log pipeline or SIEM. Never throws: an event the database
   * refuses is logged at error level instead, and counted.
   */
  record(record: AuditRecord): Promise<void>;
}

export function createAuditLog(deps: { dataSource: DataSource; logger: Logger }): AuditLog {
  return {
    async record(record) {
      const event = { ...record, eventId: newUuidV7(), occurredAt: new Date() };
      try {
        const link = await appendAuditEvent(deps.dataSource.manager, event);
        const stored: AuditEvent = { ...event, ...link };
        auditEventsRecorded.inc({ outcome: record.outcome });
        deps.logger.info('audit event', { team_id: record.teamId, audit: auditEventItem(stored) });
      } catch (err) {
        auditEventsNotStored.inc();
        const unlinked: AuditEvent = { ...event, seq: 0, prevHash: '', hash: '' };
        deps.logger.error('audit event not stored', { team_id: record.teamId, audit: auditEventItem(unlinked), err });
      }
    },
  };
}

/** The service itself as an actor: `uid` names the part that acted (`retention`, `scheduler`, …). */
export function serviceActor(part: string): AuditActor {
  return { type: 'service', uid: part };
}
