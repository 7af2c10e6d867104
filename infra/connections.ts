import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../db/data-source';
import type { Logger } from '../core/logger';
import type { Tracing } from './tracing';

export async function openDataSource(
  databaseUrl: string,
  options: { poolSize?: number; queryTimeoutMs?: number; logger?: Logger } = {},
): Promise<DataSource> {
  return createDataSource(databaseUrl, options).initialize();
}

export async function connectTemporalClient(
  address: string,
  namespace: string,
  tracing?: Tracing,
): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect({ address });
  const interceptors = { workflow: tracing?.clientInterceptors() ?? [] };
  return { connection, client: new Client({ connection, namespace, interceptors }) };
}

export function connectWorkerConnection(address: string): Promise<NativeConnection> {
  return NativeConnection.connect({ address });
}
