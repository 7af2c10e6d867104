import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../db/data-source';
import type { TemporalConnectionSettings } from '../core/config/temporal-profile';
import type { Logger } from '../core/logger';
import type { Tracing } from './tracing';

export async function openDataSource(
  databaseUrl: string,
  options: { poolSize?: number; queryTimeoutMs?: number; logger?: Logger } = {},
): Promise<DataSource> {
  try {
    return await createDataSource(databaseUrl, options).initialize();
  } catch (err) {
    throw postgresConnectError(databaseUrl, err);
  }
}

/** Where DATABASE_URL points and how, never its password. */
function describeDatabaseUrl(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname}:${url.port || 5432}${url.pathname} (sslmode=${url.searchParams.get('sslmode') ?? 'unset'})`;
  } catch {
    return 'DATABASE_URL';
  }
}

function postgresConnectError(databaseUrl: string, err: unknown): Error {
  const message = err instanceof Error ? err.message : String(err);
  let hint = '';
  if (/no encryption|SSL off/i.test(message))
    hint = '. The server wants TLS: add ?sslmode=verify-full&sslrootcert=<its CA file> to DATABASE_URL.';
  else if (/certificate|self[- ]signed|altnames|SSL|TLS/i.test(message))
    hint =
      ". The TLS handshake failed: sslrootcert in DATABASE_URL must be the CA of the server's certificate, and the URL's host a name that certificate carries.";
  return new Error(`Cannot connect to PostgreSQL at ${describeDatabaseUrl(databaseUrl)}: ${message}${hint}`, {
    cause: err,
  });
}

/** Where Temporal is and how to reach it: the resolved address, the namespace, TLS and API key. */
export interface TemporalTarget {
  address: string;
  namespace: string;
  /** TLS, API key and headers from the configuration (`config.temporal.connection`); none: plaintext. */
  security?: TemporalConnectionSettings;
}

/** How long a process waits at start for Temporal to answer before it stops, saying why. */
const CONNECT_TIMEOUT_MS = 10_000;

function connectionOptions(target: Omit<TemporalTarget, 'namespace'>) {
  const security = target.security;
  return {
    address: target.address,
    tls: security?.tls,
    apiKey: security?.apiKey,
    metadata: security?.metadata,
  };
}

export async function connectTemporalClient(
  target: TemporalTarget,
  tracing?: Tracing,
): Promise<{ connection: Connection; client: Client }> {
  const connection = await explained(
    target,
    Connection.connect({ ...connectionOptions(target), connectTimeout: CONNECT_TIMEOUT_MS }),
  );
  const interceptors = { workflow: tracing?.clientInterceptors() ?? [] };
  return { connection, client: new Client({ connection, namespace: target.namespace, interceptors }) };
}

export function connectWorkerConnection(target: Omit<TemporalTarget, 'namespace'>): Promise<NativeConnection> {
  return explained(target, NativeConnection.connect(connectionOptions(target)));
}

/**
 * The connection, or an error that says where, how (TLS, mTLS, API key) and which settings to
 * check, within CONNECT_TIMEOUT_MS and a little: a wrong certificate must stop a process at
 * start, never leave it waiting.
 */
async function explained<T>(target: Omit<TemporalTarget, 'namespace'>, connecting: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${(CONNECT_TIMEOUT_MS + 5_000) / 1000} s`)),
      CONNECT_TIMEOUT_MS + 5_000,
    );
  });
  try {
    return await Promise.race([connecting, deadline]);
  } catch (err) {
    throw temporalConnectError(target, err);
  } finally {
    clearTimeout(timer);
  }
}

function temporalConnectError(target: Omit<TemporalTarget, 'namespace'>, err: unknown): Error {
  const message = err instanceof Error ? err.message : String(err);
  const security = target.security?.security ?? 'plaintext';
  const settings = target.security?.sources.length ? `; settings: ${target.security.sources.join(', ')}` : '';
  return new Error(
    `Cannot connect to Temporal at ${target.address} over ${security}${settings}: ${message}${hintFor(message, security)}`,
    { cause: err },
  );
}

function hintFor(message: string, security: string): string {
  if (/UNAUTHENTICATED|PERMISSION_DENIED|401|403/i.test(message))
    return '. Temporal refused the credentials: check TEMPORAL_API_KEY (or the client certificate).';
  if (security === 'plaintext')
    return '. If this Temporal wants TLS, set TEMPORAL_TLS=true (and TEMPORAL_TLS_* or TEMPORAL_API_KEY).';
  if (/certificate|tls|ssl|handshake|alert|unknown ca|invalid peer/i.test(message))
    return '. The TLS handshake failed: check TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME and the client certificate.';
  return '';
}
