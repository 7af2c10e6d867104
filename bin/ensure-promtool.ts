import { ensurePromtool, PROMTOOL_VERSION } from '../infra/promtool';

/** Builds promtool, the Prometheus rule checker of the tests, into the cache (once per machine), and prints where it is. */
async function main(): Promise<void> {
  process.stdout.write(`promtool ${PROMTOOL_VERSION}: ${await ensurePromtool()}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
