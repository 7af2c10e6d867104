/**
 * The embedded PostgreSQL and Temporal dev server of the configuration's data directory, started
 * the way `npm start` starts them but without its data directory lock: to a later `npm start`
 * there, they are what a dead instance left running (test/start.test.ts). An ES module jest
 * cannot load starts them, hence a child process. Prints one line when they run; stops them
 * (if they still run) when stdin closes.
 */
import { loadConfig } from '../../core/config';
import { startDependencies } from '../../infra/runtime';

async function main(): Promise<void> {
  const deps = await startDependencies(loadConfig(), () => undefined, { temporalUi: false });
  process.stdout.write('running\n');
  const stop = () => void deps.stop().finally(() => process.exit(0));
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
}

main().catch((err: unknown) => {
  process.stderr.write(`leftover servers failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
