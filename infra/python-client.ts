import path from 'node:path';
import { ensurePythonVenv } from './python-venv';

/** The official Python client this service is checked against on every endpoint. */
export const PYTHON_CLIENT = 'oz-agent-sdk==0.15.0';

/** The newest official Python client (`WarpClient`), the reference for shapes. */
export const WARP_CLIENT = 'warp-platform-sdk==1.0.0';

/** The python of a cached virtual environment with the official Python client. */
export async function ensurePythonClient(): Promise<string> {
  return path.join(await ensurePythonVenv('python-client', PYTHON_CLIENT), 'bin', 'python');
}

/** The python of a cached virtual environment with the newest official Python client. */
export async function ensureWarpClient(): Promise<string> {
  return path.join(await ensurePythonVenv('warp-client', WARP_CLIENT), 'bin', 'python');
}

/** The oldest official Python client (`WarpAPI`, Dec 2025), which reads runs as tasks (`/agent/tasks`). */
export const OLDEST_CLIENT = 'warp-sdk==0.1.1';

/** The python of a cached virtual environment with the oldest official Python client. */
export async function ensureOldestClient(): Promise<string> {
  return path.join(await ensurePythonVenv('oldest-client', OLDEST_CLIENT), 'bin', 'python');
}

/** The official Python client between the oldest and oz-agent-sdk (`WarpAPI`, 12 methods). */
export const AGENT_CLIENT = 'warp-agent-sdk==0.4.0';

/** The python of a cached virtual environment with warp-agent-sdk. */
export async function ensureAgentClient(): Promise<string> {
  return path.join(await ensurePythonVenv('agent-client', AGENT_CLIENT), 'bin', 'python');
}
