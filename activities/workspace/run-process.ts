import { spawn } from 'node:child_process';

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
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  signal?: AbortSignal;
  /** How much output to keep (head and tail); the rest is replaced by a marker. */
  keepBytes: number;
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
    const child = spawn(options.file, options.args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const capture = new OutputCapture(options.keepBytes);
    child.stdout.on('data', (chunk: Buffer) => capture.add(chunk));
    child.stderr.on('data', (chunk: Buffer) => capture.add(chunk));

    let timedOut = false;
    let cancelled = false;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const signalGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, sig);
      } catch {
        // the group is already empty
      }
    };
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
      resolve({
        exitCode,
        signal,
        timedOut,
        cancelled,
        durationMs: Date.now() - started,
        output: capture.text(),
        outputBytes: capture.total,
      });
    };
    child.once('error', (err) => {
      settled = true;
      for (const t of timers) clearTimeout(t);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      signalGroup('SIGKILL');
      timers.push(setTimeout(() => finish(code, signal), DRAIN_MS));
      child.once('close', () => finish(code, signal));
    });
  });
}

/** Keeps the first and last halves of a stream beyond a size, with a marker between. */
export class OutputCapture {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer = Buffer.alloc(0);
  total = 0;
  constructor(private readonly keepBytes: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    const half = Math.floor(this.keepBytes / 2);
    if (this.headBytes < half) {
      const take = chunk.subarray(0, half - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (chunk.length) this.tail = Buffer.concat([this.tail, chunk]).subarray(-half);
  }

  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const omitted = this.total - this.headBytes - this.tail.length;
    if (omitted <= 0) return head + this.tail.toString('utf8');
    return `${head}\n[... ${omitted} bytes of output omitted ...]\n${this.tail.toString('utf8')}`;
  }
}

/** Caps text for the model with a marker that says how much was cut. */
export function capText(text: string, limitBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= limitBytes) return text;
  const capture = new OutputCapture(limitBytes);
  capture.add(Buffer.from(text, 'utf8'));
  return capture.text();
}
