import { PassThrough } from 'node:stream';
import type { LaunchedProcess } from './launched-process';
import type { ServerChannel } from './spawn-server';

/** A spawn server's process once started, and what to free when it ends. */
export interface StartedServer {
  process: LaunchedProcess;
  release(): Promise<void>;
}

/**
 * A spawn server reached through a process that is still being started: frames wait for it, and
 * a start that fails ends the server as never started.
 */
export function deferredChannel(start: () => Promise<StartedServer>, name: string): ServerChannel {
  const input = new PassThrough();
  const output = new PassThrough();
  let process: LaunchedProcess | undefined;
  let killed = false;
  let holding = false;
  let onEnd: ((reason: string, neverStarted: boolean) => void) | undefined;
  let ended: [string, boolean] | undefined;
  const end = (reason: string, neverStarted: boolean) => {
    if (ended) return;
    ended = [reason, neverStarted];
    output.end();
    input.unpipe();
    input.resume();
    onEnd?.(reason, neverStarted);
  };
  start().then(
    ({ process: child, release }) => {
      process = child;
      if (holding) child.hold?.(true);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2048)));
      // A server that never said anything never started what it was asked to (its sandbox failed, say).
      let spoke = false;
      child.stdout.once('data', () => (spoke = true));
      child.stdout.pipe(output, { end: false });
      input.pipe(child.stdin!);
      child.stdin!.on('error', () => undefined);
      const finish = (neverStarted: boolean, why: string) => {
        void release().catch(() => undefined);
        end(`${name} ${why}${stderr.trim() ? `: ${stderr.trim()}` : ''}`, neverStarted);
      };
      child.once('error', (err: Error) => finish(true, `could not start (${err.message})`));
      // Killed from here (stopped, its run removed), it did not fail: its processes were killed.
      child.once('close', (code: number | null, sig: string | null) =>
        finish(!spoke && !killed, `ended (${sig ?? code})`),
      );
      if (killed) child.signal('SIGKILL');
    },
    (err: unknown) => end(`${name} could not start: ${(err as Error).message}`, true),
  );
  return {
    input,
    output,
    // The server's own process holds the worker while the server runs something, as a child would.
    hold(on) {
      holding = on;
      process?.hold?.(on);
    },
    kill() {
      killed = true;
      process?.signal('SIGKILL');
    },
    onEnd(callback) {
      onEnd = callback;
      if (ended) callback(...ended);
    },
  };
}
