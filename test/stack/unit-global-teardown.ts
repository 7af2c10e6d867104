import type { ChildProcess } from 'node:child_process';
import { removeTestTempRoot } from './temp-root';

/** A test stack still running keeps its data there: the stack's own teardown removes the directory after it stops. */
export default function unitGlobalTeardown(): void {
  const stack = (globalThis as { __testStack?: ChildProcess }).__testStack;
  if (stack && stack.exitCode === null && stack.signalCode === null) return;
  removeTestTempRoot();
}
