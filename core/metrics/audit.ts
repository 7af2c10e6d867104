import { Counter } from 'prom-client';
import { metricsRegistry } from './registry';

/** The audit log: events recorded, and events that could not be stored (they are still in the logs). */

export const auditEventsRecorded = new Counter({
  name: 'agent_runs_audit_events_total',
  help: 'Audit events stored, by outcome (success, denied, failed).',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const auditEventsNotStored = new Counter({
  name: 'agent_runs_audit_events_not_stored_total',
  help: 'Audit events the database refused (the event is still logged at error with `audit`): alert on any.',
  registers: [metricsRegistry],
});

export const auditEventsPruned = new Counter({
  name: 'agent_runs_audit_events_pruned_total',
  help: 'Audit events deleted by their retention (AUDIT_RETENTION_DAYS).',
  registers: [metricsRegistry],
});
