import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { enterTestTempRoot } from './temp-root';

const ROOT = path.resolve(__dirname, '..', '..');

/** Starts the test stack once per `jest` run and shares its addresses through the environment. */
export default async function globalSetup(): Promise<void> {
  enterTestTempRoot();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/stack/test-stack.ts')], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`test stack exited with ${code} before it was ready`)));
  });
  process.env.AGENT_RUNS_TEST_STACK = line;
  (globalThis as { __testStack?: typeof child }).__testStack = child;
}
