/** Makes the virtual environment with schemathesis that the OpenAPI conformance test runs. */
import { ensureSchemathesis } from '../infra/schemathesis';

ensureSchemathesis()
  .then((command) => process.stdout.write(`${command}\n`))
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
