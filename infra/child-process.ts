import { spawnSync, type ChildProcess } from 'node:child_process';

/**
 * util-linux's `setpriv` where this machine has it: with `--pdeathsig` the kernel signals the
 * program when the thread that started it dies, however it dies (SIGKILL, a V8 fatal abort,
 * the OOM killer), where no exit handler of ours runs.
 */
let setprivPath: string | null | undefined;
function setpriv(): string | null {
  if (setprivPath === undefined) {
    const found = spawnSync('sh', ['-c', 'command -v setpriv'], { encoding: 'utf8' });
    setprivPath = found.status === 0 && found.stdout.trim() ? found.stdout.trim() : null;
  }
  return setprivPath;
}

/**
 * `command` and `args` to spawn so that the program gets `signal` when this process dies:
 * through `setpriv --pdeathsig`, which then execs the program (same pid). Unchanged where
 * setpriv is missing (not Linux): the next start stops such leftovers (infra/leftovers.ts).
 */
export function dyingWithThisProcess(
  command: string,
  args: string[],
  signal: 'SIGINT' | 'SIGTERM',
): { command: string; args: string[] } {
  const wrapper = setpriv();
  if (wrapper === null) return { command, args };
  return { command: wrapper, args: ['--pdeathsig', signal.replace(/^SIG/, ''), '--', command, ...args] };
}

/** Sends `signal` and waits for the exit; SIGKILL after `graceMs`. */
export function stopChild(child: ChildProcess, graceMs = 10_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}
