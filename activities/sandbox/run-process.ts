import { OutputCapture } from '../tools/output-capture';
import { FileTail } from './file-tail';
import type { PreparedProcess } from './sandbox';
import { startPrepared } from './start-prepared';

export interface ProcessResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
  /** stdout and stderr interleaved as they arrived, capped at `keepBytes`. */
  output: string;
  outputBytes: number;
}

export interface RunProcessOptions {
  /** What to run, as a sandbox prepared it. */
  prepared: PreparedProcess;
  timeoutMs: number;
  signal?: AbortSignal;
  /** How much output to keep (head and tail); the rest is replaced by a marker. */
  keepBytes: number;
  /** Hears standard output as it arrives (it is kept in `output` too). */
  onStdout?: (chunk: Buffer) => void;
  /**
   * Standard output goes to this existing file instead of a pipe, and is read from there as it
   * grows (LaunchOptions.stdoutFile): what the process printed survives the worker.
   */
  stdoutFile?: string;
}

const KILL_GRACE_MS = 2000;

/** After the process exits, how long to wait for the pipes to drain before closing them. */
const DRAIN_MS = 1000;

/**
 * Runs a process (usually a sandbox around `bash -c command`) in its own process group. On
 * timeout or abort the whole group gets SIGTERM, then SIGKILL; when the process exits, whatever
 * it left running in its group is killed, and a process that escaped the group cannot hold the
 * call open by keeping the output pipes.
 */
export function runProcess(options: RunProcessOptions): Promise<ProcessResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const { stdoutFile } = options;
    const child = startPrepared(options.prepared, { detached: true, ...(stdoutFile ? { stdoutFile } : {}) });
    const capture = new OutputCapture(options.keepBytes);
    const onStdout = (chunk: Buffer) => {
      capture.add(chunk);
      options.onStdout?.(chunk);
    };
    child.stdout.on('data', onStdout);
    const tail = stdoutFile ? new FileTail(stdoutFile, onStdout) : undefined;
    child.stderr.on('data', (chunk: Buffer) => capture.add(chunk));

    let timedOut = false;
    let cancelled = false;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const signalGroup = (sig: NodeJS.Signals) => child.signal(sig, { group: true });
    const killGroup = () => {
      signalGroup('SIGTERM');
      timers.push(setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS));
    };
    timers.push(
      setTimeout(() => {
        timedOut = true;
        killGroup();
      }, options.timeoutMs),
    );
    const onAbort = () => {
      cancelled = true;
      killGroup();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });

    const finish = (exitCode: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      options.signal?.removeEventListener('abort', onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      // The file has what the process wrote before it exited: read to its end.
      void (tail?.finish() ?? Promise.resolve()).then(
        () =>
          resolve({
            exitCode,
            signal,
            timedOut,
            cancelled,
            durationMs: Date.now() - started,
            output: capture.text(),
            outputBytes: capture.total,
          }),
        reject,
      );
    };
    child.once('error', (err) => {
      settled = true;
      for (const t of timers) clearTimeout(t);
      const rejectWith = () => reject(err);
      void (tail?.finish() ?? Promise.resolve()).then(rejectWith, rejectWith);
    });
    child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      signalGroup('SIGKILL');
      timers.push(setTimeout(() => finish(code, signal), DRAIN_MS));
      child.once('close', () => finish(code, signal));
    });
  });
}
