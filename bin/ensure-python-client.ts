/** Makes the virtual environments with the official Python clients that the contract tests drive. */
import { ensureAgentClient, ensureOldestClient, ensurePythonClient, ensureWarpClient } from '../infra/python-client';

Promise.all([ensurePythonClient(), ensureWarpClient(), ensureOldestClient(), ensureAgentClient()])
  .then((pythons) => process.stdout.write(`${pythons.join('\n')}\n`))
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
