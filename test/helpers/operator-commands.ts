import { execFile } from 'node:child_process';
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
  return operatorCommand('bin/keys.ts', ctx, {}, args);
}

/** `npm run secrets -- <args>` against the context's database, with the keys of `env` (SECRETS_ENCRYPTION_KEYS). */
export function secretsCli(ctx: TestContext, env: Record<string, string>, ...args: string[]): Promise<CliResult> {
  return operatorCommand('bin/secrets.ts', ctx, { SECRETS_ENCRYPTION_KEY: '', ...env }, args);
}

function operatorCommand(
  script: string,
  ctx: TestContext,
  env: Record<string, string>,
  args: string[],
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: ctx.stack.databaseUrl, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The last line of a command's output: where `create` and `rotate` print the raw key. */
export const lastLine = (text: string): string => text.trimEnd().split('\n').pop()!;
