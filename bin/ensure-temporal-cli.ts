import { loadConfig } from '../core/config';
import { locateTemporalCli } from '../infra/temporal-cli';

/** Finds (or builds) the Temporal CLI the way `npm start` does and prints where it is. */
async function main(): Promise<void> {
  const config = loadConfig();
  const source = await locateTemporalCli({
    cliPath: config.temporal.cliPath,
    say: (m) => process.stdout.write(`${m}\n`),
  });
  process.stdout.write(
    source.kind === 'path'
      ? `temporal CLI: ${source.path} (${source.origin})\n`
      : 'temporal CLI: the SDK will download it\n',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
