/** What a change through the API is, for the audit log: its action, the kind of thing it changes, and which. */
export interface RouteAudit {
  action: string;
  resource: string;
  /** Which one: a path parameter, or a field of the answer (what a create made). */
  id?: { param: string } | { answer: string } | { body: string };
}

const param = (name: string) => ({ param: name });
const answer = (field: string) => ({ answer: field });

/**
 * Every route that changes something, by `METHOD path` as the router names it: each is recorded,
 * refused attempts too. A route that changes nothing (a validation) is `null`. A test walks the
 * routers and fails on a changing route missing here, so a new route cannot go unrecorded.
 */
export const ROUTE_AUDITS: Record<string, RouteAudit | null> = {
  'POST /api/v1/agent/runs': { action: 'run.create', resource: 'run', id: answer('run_id') },
  'POST /api/v1/agent/run': { action: 'run.create', resource: 'run', id: answer('run_id') },
  'POST /api/v1/agent/factories/:uid/runs': { action: 'run.create', resource: 'run', id: answer('run_id') },
  'POST /api/v1/factory/:uid/runs': { action: 'run.create', resource: 'run', id: answer('run_id') },
  'POST /api/v1/agent/runs/:runId/followups': { action: 'run.followup', resource: 'run', id: param('runId') },
  'POST /api/v1/agent/runs/:runId/approvals/:approvalId': {
    action: 'approval.decide',
    resource: 'run',
    id: param('runId'),
  },
  'POST /api/v1/agent/conversations/:conversationId/followups': {
    action: 'run.followup',
    resource: 'conversation',
    id: param('conversationId'),
  },
  'POST /api/v1/agent/runs/:runId/interrupt': { action: 'run.interrupt', resource: 'run', id: param('runId') },
  'POST /api/v1/agent/conversations/:conversationId/interrupt': {
    action: 'run.interrupt',
    resource: 'conversation',
    id: param('conversationId'),
  },
  'POST /api/v1/agent/runs/:runId/cancel': { action: 'run.cancel', resource: 'run', id: param('runId') },
  'POST /api/v1/agent/runs/:runId/fork': { action: 'run.fork', resource: 'run', id: param('runId') },
  'DELETE /api/v1/agent/runs/:runId': { action: 'run.delete', resource: 'run', id: param('runId') },
  'POST /api/v1/agent/environments': { action: 'environment.create', resource: 'environment', id: answer('uid') },
  'PUT /api/v1/agent/environments/:uid': { action: 'environment.update', resource: 'environment', id: param('uid') },
  'DELETE /api/v1/agent/environments/:uid': { action: 'environment.delete', resource: 'environment', id: param('uid') },
  'POST /api/v1/agent/identities': { action: 'identity.create', resource: 'identity', id: answer('uid') },
  'PUT /api/v1/agent/identities/:uid': { action: 'identity.update', resource: 'identity', id: param('uid') },
  'DELETE /api/v1/agent/identities/:uid': { action: 'identity.delete', resource: 'identity', id: param('uid') },
  'POST /api/v1/agent/secrets': { action: 'secret.write', resource: 'secret', id: { body: 'name' } },
  'DELETE /api/v1/agent/secrets/:name': { action: 'secret.delete', resource: 'secret', id: param('name') },
  'POST /api/v1/agent/webhooks': { action: 'webhook.create', resource: 'webhook', id: answer('id') },
  'DELETE /api/v1/agent/webhooks/:id': { action: 'webhook.delete', resource: 'webhook', id: param('id') },
  'POST /api/v1/agent/schedules': { action: 'schedule.create', resource: 'schedule', id: answer('id') },
  'PUT /api/v1/agent/schedules/:scheduleId': {
    action: 'schedule.update',
    resource: 'schedule',
    id: param('scheduleId'),
  },
  'DELETE /api/v1/agent/schedules/:scheduleId': {
    action: 'schedule.delete',
    resource: 'schedule',
    id: param('scheduleId'),
  },
  'POST /api/v1/agent/schedules/:scheduleId/pause': {
    action: 'schedule.pause',
    resource: 'schedule',
    id: param('scheduleId'),
  },
  'POST /api/v1/agent/schedules/:scheduleId/resume': {
    action: 'schedule.resume',
    resource: 'schedule',
    id: param('scheduleId'),
  },
  'POST /api/v1/agent/factories/validate': null,
  'POST /api/v1/agent/factories': { action: 'factory.create', resource: 'factory', id: answer('uid') },
  'PUT /api/v1/agent/factories/:uid': { action: 'factory.update', resource: 'factory', id: param('uid') },
  'DELETE /api/v1/agent/factories/:uid': { action: 'factory.delete', resource: 'factory', id: param('uid') },
  'POST /api/v1/factory/:uid/tasks': { action: 'factory_task.create', resource: 'factory_task', id: answer('uid') },
  'PATCH /api/v1/factory/:uid/tasks/:taskUid': {
    action: 'factory_task.update',
    resource: 'factory_task',
    id: param('taskUid'),
  },
  'DELETE /api/v1/factory/:uid/tasks/:taskUid': {
    action: 'factory_task.delete',
    resource: 'factory_task',
    id: param('taskUid'),
  },
  'POST /api/v1/factory/:uid/tasks/:taskUid/cancel': {
    action: 'factory_task.cancel',
    resource: 'factory_task',
    id: param('taskUid'),
  },
};

/** The id of what a request changed, as its route's audit says where to find it (bounded: it is the caller's). */
export function auditedResourceId(
  audit: RouteAudit,
  request: { params: Record<string, string>; body: unknown; answer: unknown },
): string | undefined {
  const where = audit.id;
  let value: unknown;
  if (where === undefined) return undefined;
  if ('param' in where) value = request.params[where.param];
  else if ('answer' in where) value = fieldOf(request.answer, where.answer);
  else value = fieldOf(request.body, where.body);
  return typeof value === 'string' && value.length > 0 ? value.slice(0, 200) : undefined;
}

function fieldOf(value: unknown, field: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined;
}
