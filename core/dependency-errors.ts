import { ServiceError } from '@temporalio/client';

/** PostgreSQL's `query_canceled`: a statement ran past `statement_timeout` (an overloaded database). */
const STATEMENT_TIMEOUT = '57014';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01',
  '57P03',
  '53300',
  STATEMENT_TIMEOUT,
]);

/** gRPC status codes that mean Temporal is unreachable or overloaded, not that the call was wrong. */
const TRANSIENT_GRPC_CODES = new Set([
  1, // CANCELLED (the connection went away)
  2, // UNKNOWN (a stream reset while Temporal restarts)
  4, // DEADLINE_EXCEEDED (no answer within TEMPORAL_RPC_TIMEOUT_SECONDS)
  8, // RESOURCE_EXHAUSTED
  10, // ABORTED
  13, // INTERNAL (a stream reset while Temporal restarts)
  14, // UNAVAILABLE
]);

/**
 * New database work refused without trying: PostgreSQL stopped answering and has not answered a
 * probe since (db/database-gate.ts).
 */
export class DatabaseUnreachableError extends Error {
  constructor() {
    super('PostgreSQL is unreachable; new database work is refused until it answers a probe again');
    this.name = 'DatabaseUnreachableError';
  }
}

/** A statement the server itself cancelled for running too long: the connection is still good. */
export function isStatementTimeout(err: unknown): boolean {
  return (err as { code?: unknown }).code === STATEMENT_TIMEOUT;
}

/**
 * True when an error means PostgreSQL or Temporal cannot be reached, not that the request is
 * bad. A Temporal error such as INVALID_ARGUMENT (a missing search attribute) is a bug or a
 * misconfiguration, which retrying cannot fix: it is not an outage.
 */
export function isDependencyDown(err: unknown): boolean {
  if (err instanceof DatabaseUnreachableError) return true;
  if (err instanceof ServiceError) {
    const code = (err.cause as { code?: unknown } | undefined)?.code;
    return typeof code !== 'number' || TRANSIENT_GRPC_CODES.has(code);
  }
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  const message = err instanceof Error ? err.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Connection is not established|Query read timeout|UNAVAILABLE/i.test(
    message,
  );
}

/** True when `err`, or an error it was caused by, means a dependency is down (isDependencyDown). */
export function isCausedByOutage(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if (isDependencyDown(e)) return true;
  }
  return false;
}
