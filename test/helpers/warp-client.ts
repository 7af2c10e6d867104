import { execFile } from 'node:child_process';
import path from 'node:path';
import { ensureWarpClient } from '../../infra/python-client';

export interface WarpCall {
  /** The client's method, by its path from the client: `agent.list_models`, `agent.runs.retrieve`. */
  call: string;
  args?: unknown[];
  kwargs?: Record<string, unknown>;
}

export type WarpResult = { ok: unknown } | { error: string; status?: number; detail?: string; body?: unknown };

/**
 * Makes `calls` with the newest official Python client (warp-platform-sdk, strict response
 * validation), as `key` against `baseUrl`; answers what each returned, in order.
 */
export async function warpClientCalls(baseUrl: string, key: string, calls: WarpCall[]): Promise<WarpResult[]> {
  const python = await ensureWarpClient();
  const script = path.join(__dirname, '..', 'contract', 'warp_client_calls.py');
  const output = await new Promise<string>((resolve, reject) => {
    const child = execFile(
      python,
      [script],
      { env: { ...process.env, WARP_BASE_URL: `${baseUrl}/api/v1`, WARP_API_KEY: key }, timeout: 120_000 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`the Python client failed:\n${stderr}\n${stdout}`)) : resolve(stdout),
    );
    child.stdin!.end(JSON.stringify(calls));
  });
  return JSON.parse(output.trim().split('\n').pop()!) as WarpResult[];
}
