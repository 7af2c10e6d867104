import type { Connection } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { pingDatabase } from '../db/probe-reads';

export type CheckResult = 'ok' | 'unavailable';

const CHECK_TIMEOUT_MS = 3000;

/** 'ok' or 'unavailable', within a few seconds; what went wrong inside stays out of the answer. */
export async function check(fn: () => Promise<unknown>): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/** Whether PostgreSQL answers this process. */
export const checkDatabase = (dataSource: DataSource) => check(() => pingDatabase(dataSource));

/** Whether Temporal answers for the namespace: what starting, signalling and cancelling runs need. */
export const checkTemporal = (connection: Connection, namespace: string) =>
  check(() => connection.workflowService.describeNamespace({ namespace }));
