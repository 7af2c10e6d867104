import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from './free-port';
import { waitFor, type TestContext } from './test-context';
import { stackProcessEnv } from './worker-processes';

const ROOT = path.resolve(__dirname, '..', '..');

export interface ApiChild {
  proc: ChildProcess;
  baseUrl: string;
  output: string[];
}

/**
 * An API process as production runs it (`api/main.ts`) on the context's stack and task queue,
 * answering `/healthz` when this resolves; `env` adds to or overrides its settings (another
 * Temporal address, TLS).
 */
export async function spawnApi(c: TestContext, env: Record<string, string> = {}): Promise<ApiChild> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
    cwd: ROOT,
    env: {
      ...stackProcessEnv(c),
      PORT: String(port),
      RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitFor(
    () =>
      fetch(`${baseUrl}/healthz`).then(
        (r) => r.status,
        () => 0,
      ),
    (status) => status === 200 || proc.exitCode !== null,
    `the API process to answer; output: ${output.join('')}`,
    60_000,
  );
  if (proc.exitCode !== null) throw new Error(`the API process exited: ${output.join('')}`);
  return { proc, baseUrl, output };
}
