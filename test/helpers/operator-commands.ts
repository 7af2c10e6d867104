import { execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { TestContext } from './test-context';

const ROOT = path.resolve(__dirname, '..', '..');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npm run keys -- <args>` against the context's database, as its own process. */
export function keysCli(ctx: TestContext, ...args: string[]): Promise<CliResult> {
  return operatorCommand(ctx, 'bin/keys.ts', args);
}

/** `npm run secrets -- <args>` against the context's database, with the keys of `env` (SECRETS_ENCRYPTION_KEYS). */
export function secretsCli(ctx: TestContext, env: Record<string, string>, ...args: string[]): Promise<CliResult> {
  return operatorCommand(ctx, 'bin/secrets.ts', args, { env: { SECRETS_ENCRYPTION_KEY: '', ...env } });
}

/** `npm run teams -- <args>` against the context's database and Temporal, as its own process. */
export function teamsCli(ctx: TestContext, ...args: string[]): Promise<CliResult> {
  return operatorCommand(ctx, 'bin/teams.ts', args);
}

/**
 * One of the operators' commands, as its own process, against the context's database and
 * Temporal, with `env` added; `started` gets the process as it starts.
 */
export function operatorCommand(
  ctx: TestContext,
  script: string,
  args: string[],
  options: { env?: Record<string, string>; started?: (child: ChildProcess) => void } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: ctx.stack.databaseUrl,
          TEMPORAL_ADDRESS: ctx.stack.temporalAddress,
          TEMPORAL_NAMESPACE: ctx.config.temporal.namespace,
          ...options.env,
        },
        timeout: 120_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    options.started?.(child);
  });
}

/** The last line of a command's output: where `create` and `rotate` print the raw key. */
export const lastLine = (text: string): string => text.trimEnd().split('\n').pop()!;
