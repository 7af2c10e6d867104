import { execFile } from 'node:child_process';
import path from 'node:path';
import { ensureAgentClient, ensureOldestClient, ensurePythonClient, ensureWarpClient } from '../../infra/python-client';

export interface WarpCall {
  /** The client's method, by its path from the client: `agent.list_models`, `agent.runs.retrieve`. */
  call: string;
  args?: unknown[];
  kwargs?: Record<string, unknown>;
}

export type WarpResult = { ok: unknown } | { error: string; status?: number; detail?: string; body?: unknown };

/**
 * Makes `calls` with an official Python client (the newest, warp-platform-sdk; oz-agent-sdk 0.15.0;
 * warp-agent-sdk 0.4.0; or the oldest, warp-sdk 0.1.1), with strict response validation, as `key` against `baseUrl`; answers what each
 * returned, in order.
 */
export async function warpClientCalls(
  baseUrl: string,
  key: string,
  calls: WarpCall[],
  client: 'newest' | 'oz' | 'agent' | 'oldest' = 'newest',
): Promise<WarpResult[]> {
  const { python, which } = await {
    newest: async () => ({ python: await ensureWarpClient(), which: {} }),
    oz: async () => ({
      python: await ensurePythonClient(),
      which: { CLIENT_PACKAGE: 'oz_agent_sdk', CLIENT_CLASS: 'OzAPI' },
    }),
    agent: async () => ({
      python: await ensureAgentClient(),
      which: { CLIENT_PACKAGE: 'warp_agent_sdk', CLIENT_CLASS: 'WarpAPI' },
    }),
    oldest: async () => ({
      python: await ensureOldestClient(),
      which: { CLIENT_PACKAGE: 'warp_sdk', CLIENT_CLASS: 'WarpAPI' },
    }),
  }[client]();
  const script = path.join(__dirname, '..', 'contract', 'warp_client_calls.py');
  const output = await new Promise<string>((resolve, reject) => {
    const child = execFile(
      python,
      [script],
      { env: { ...process.env, ...which, WARP_BASE_URL: `${baseUrl}/api/v1`, WARP_API_KEY: key }, timeout: 120_000 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`the Python client failed:\n${stderr}\n${stdout}`)) : resolve(stdout),
    );
    child.stdin!.end(JSON.stringify(calls));
  });
  return JSON.parse(output.trim().split('\n').pop()!) as WarpResult[];
}
