import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';

/** `agent-runs` as a user runs it (bin/agent-runs.mjs, from source). */
export const CLI = path.join(__dirname, '..', '..', 'bin', 'agent-runs.mjs');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcessWithoutNullStreams;
  done: Promise<CliResult>;
  /** The first line the command writes to stdout. */
  firstLine: Promise<string>;
}

/** Starts `agent-runs <args>` with only the environment given (no AGENT_RUNS_*, no colour settings inherited). */
export function startCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['AGENT_RUNS_URL', 'AGENT_RUNS_API_KEY', 'FORCE_COLOR', 'NO_COLOR']) delete childEnv[name];
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...childEnv, AGENT_RUNS_CLI_FROM_SOURCE: '1', ...env },
  });
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  const firstLine = new Promise<string>((resolve) => {
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      const end = stdout.indexOf('\n');
      if (end >= 0) resolve(stdout.slice(0, end));
    });
  });
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done, firstLine };
}
