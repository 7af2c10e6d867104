import { ensureVersityGateway, VERSITY_GATEWAY_VERSION } from '../infra/versity-gateway';

/** Builds Versity Gateway, the S3 server of the tests, into the cache (once per machine), and prints where it is. */
async function main(): Promise<void> {
  process.stdout.write(`versitygw ${VERSITY_GATEWAY_VERSION}: ${await ensureVersityGateway()}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
