/** Makes the time-skipping test server the workflow tests run (infra/temporal-test-server.ts). */
import { ensureTemporalTestServer } from '../infra/temporal-test-server';

ensureTemporalTestServer()
  .then((command) => process.stdout.write(`${command}\n`))
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
