import { ServiceError } from '@temporalio/client';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01',
  '57P03',
  '53300',
]);

/** True when an error means PostgreSQL or Temporal cannot be reached, not that the request is bad. */
export function isDependencyDown(err: unknown): boolean {
  if (err instanceof ServiceError) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  const message = err instanceof Error ? err.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Connection is not established|UNAVAILABLE/i.test(
    message,
  );
}
