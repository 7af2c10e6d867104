import { ensureGitea, GITEA_VERSION } from '../infra/gitea';

/** Builds Gitea, the forge of the tests, into the cache (once per machine), and prints where it is. */
async function main(): Promise<void> {
  process.stdout.write(`gitea ${GITEA_VERSION}: ${await ensureGitea()}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
