import type { ChildProcess } from 'node:child_process';
import { removeTestTempRoot } from './temp-root';

export default async function globalTeardown(): Promise<void> {
  const child = (globalThis as { __testStack?: ChildProcess }).__testStack;
  if (child && child.exitCode === null && child.signalCode === null) {
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.stdin?.end();
    });
  }
  removeTestTempRoot();
}
