import { ensureHelm, HELM_VERSION } from '../infra/helm';

/** Builds Helm, with which the tests lint and render the chart, into the cache (once per machine), and prints where it is. */
async function main(): Promise<void> {
  process.stdout.write(`helm ${HELM_VERSION}: ${await ensureHelm()}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
