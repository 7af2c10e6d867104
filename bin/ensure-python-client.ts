/** Makes the virtual environment with the official Python client that the contract test drives. */
import { ensurePythonClient } from '../infra/python-client';

ensurePythonClient()
  .then((python) => process.stdout.write(`${python}\n`))
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
