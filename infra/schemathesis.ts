import path from 'node:path';
import { ensurePythonVenv } from './python-venv';

/** The API fuzzer that checks the service against its OpenAPI document (test/openapi-schemathesis.test.ts). */
export const SCHEMATHESIS = 'schemathesis==4.32.5';

/** The `schemathesis` command of a cached virtual environment. */
export async function ensureSchemathesis(): Promise<string> {
  return path.join(await ensurePythonVenv('schemathesis', SCHEMATHESIS), 'bin', 'schemathesis');
}
