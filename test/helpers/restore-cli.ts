import { execFile } from 'node:child_process';
import path from 'node:path';
import type { CliResult } from './operator-commands';
import type { TestContext } from './test-context';

const ROOT = path.resolve(__dirname, '..', '..');

/** `npm run restore -- <args>` against the context's PostgreSQL, Temporal and task queue, as its own process. */
export function restoreCli(ctx: TestContext, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'bin/restore.ts', ...args],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: ctx.stack.databaseUrl,
          TEMPORAL_ADDRESS: ctx.stack.temporalAddress,
          TEMPORAL_TASK_QUEUE: ctx.config.temporal.taskQueue,
        },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
