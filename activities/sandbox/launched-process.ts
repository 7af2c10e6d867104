import { spawn } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { EventEmitter } from 'node:events';
import type { Writable } from 'node:stream';

export interface LaunchOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** In a session (and process group) of its own, which `signal(…, { group: true })` reaches. */
  detached?: boolean;
  /** A pipe for standard input; otherwise /dev/null. */
  stdin?: boolean;
  /** Does not keep the worker's event loop alive (a server of its own, say); spawn servers only. */
  background?: boolean;
  /** `env` on top of the server's own environment (a server inside a sandbox has the sandbox's); spawn servers only. */
  inheritEnv?: boolean;
  /**
   * Killed by a signal not sent from here, it exits 128+n, as a shell or bubblewrap reports it
   * (a run's command sandbox); spawn servers only.
   */
  shellStatus?: boolean;
  /**
   * Standard output goes to this existing file, appended to, instead of a pipe (`stdout` then
   * ends at once): what the process wrote is on disk even if the worker dies before reading it.
   */
  stdoutFile?: string;
}

/**
 * A started process, as runProcess and exec use it: Node's ChildProcess, or one the spawn server
 * started (spawn-server.ts). Events: 'error' (it could not start), 'exit' (code, signal), then
 * 'close' (code, signal) once its output has ended.
 */
export interface LaunchedProcess extends EventEmitter {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Null without `stdin`. */
  readonly stdin: Writable | null;
  /** Sends a signal to the process, or to its whole group; nothing once it is gone. */
  signal(signal: NodeJS.Signals, options?: { group?: boolean }): void;
  /** Whether it keeps the worker's event loop alive (spawn servers' processes only). */
  hold?(on: boolean): void;
}

/** Starts a process. */
export type ProcessLauncher = (file: string, args: string[], options: LaunchOptions) => LaunchedProcess;

/** Node's own child_process: a fork of this process. */
export const forkLauncher: ProcessLauncher = (file, args, options) => {
  const stdoutFd = options.stdoutFile
    ? openSync(options.stdoutFile, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW)
    : undefined;
  let child;
  try {
    child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      detached: options.detached ?? false,
      stdio: [options.stdin ? 'pipe' : 'ignore', stdoutFd ?? 'pipe', 'pipe'],
    });
  } finally {
    if (stdoutFd !== undefined) closeSync(stdoutFd);
  }
  return Object.assign(child, {
    ...(stdoutFd !== undefined ? { stdout: Readable.from([]) } : {}),
    signal(sig: NodeJS.Signals, { group = false } = {}) {
      try {
        if (group && child.pid !== undefined) process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        // already gone
      }
    },
  }) as unknown as LaunchedProcess;
};
