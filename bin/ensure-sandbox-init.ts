import { loadConfig } from '../core/config';
import { locateSandboxInit } from '../activities/sandbox/sandbox-init-binary';

/** Builds sandbox-init into the cache (once per source) the way a worker does at start, and prints where it is. */
async function main(): Promise<void> {
  const config = loadConfig();
  process.stdout.write(`sandbox-init: ${await locateSandboxInit(config.sandbox.initPath)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
