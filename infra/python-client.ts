import path from 'node:path';
import { ensurePythonVenv } from './python-venv';

/** The official Python client this service is checked against. */
export const PYTHON_CLIENT = 'oz-agent-sdk==0.15.0';

/** The python of a cached virtual environment with the official Python client. */
export async function ensurePythonClient(): Promise<string> {
  return path.join(await ensurePythonVenv('python-client', PYTHON_CLIENT), 'bin', 'python');
}
