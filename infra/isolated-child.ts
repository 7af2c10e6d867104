import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { JobReply, JobRequest } from './isolated-child-serve';

/**
 * A long-lived child process that runs jobs on data nobody vouched for, one at a time, so that
 * what no JavaScript `catch` can stop (V8 aborting on an exhausted heap or stack, a loop that
 * never ends) ends the child and not this process. A `worker_threads` Worker would not do: V8's
 * fatal errors take the whole process with them.
 */
export interface IsolatedChildOptions {
  /** The child's module, which calls serveJobs: `.ts` runs under tsx (sources, tests), `.js` as it is (dist/). */
  entry: string;
  /** How long one job may run before the child is killed (and started again for the next job). */
  deadlineMs: number;
  /** The child's V8 heap (`--max-old-space-size`, MB) and stack (`--stack-size`, KB). */
  maxOldSpaceMb: number;
  stackSizeKb: number;
  /** How long the child may take to load its modules; default 60 s. */
  startDeadlineMs?: number;
}

/** Why a job got no answer: it ran past its deadline, or the child stopped (killed, out of memory, crashed). */
export class IsolatedChildError extends Error {
  override name = 'IsolatedChildError';
  constructor(
    readonly reason: 'timeout' | 'exited',
    message: string,
    /** The limits the child ran under, for an answer that names them. */
    readonly limits: Pick<IsolatedChildOptions, 'deadlineMs' | 'maxOldSpaceMb'>,
  ) {
    super(message);
  }
}

export interface IsolatedChild {
  /** Runs `job` on `input` (plain data both ways) in the child; rejects with IsolatedChildError. */
  run(job: string, input: unknown): Promise<unknown>;
  /** The child's process id while one runs. */
  readonly pid: number | undefined;
  /** Stops the child; jobs not yet answered are rejected. */
  close(): void;
}

interface Pending {
  job: string;
  input: unknown;
  resolve: (output: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * One child, started at the first job and again after it dies. Jobs wait their turn here, not
 * in the child, so each one's deadline counts its own time only. An idle child does not keep
 * this process alive, and exits when this process does (its IPC channel closes).
 */
export function createIsolatedChild(options: IsolatedChildOptions): IsolatedChild {
  return new OneChild(options);
}

class OneChild implements IsolatedChild {
  private readonly queue: Pending[] = [];
  private child: ChildProcess | undefined;
  private ready = false;
  private current: (Pending & { id: number }) | undefined;
  private nextId = 1;
  private timer: NodeJS.Timeout | undefined;
  private killedFor: IsolatedChildError | undefined;
  private lastWords: () => string | undefined = () => undefined;

  constructor(private readonly options: IsolatedChildOptions) {}

  run(job: string, input: unknown): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ job, input, resolve, reject });
      this.pump();
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  close(): void {
    const error = this.failure('exited', 'the child process was closed');
    for (const job of this.queue.splice(0)) job.reject(error);
    this.kill(error);
  }

  /** Sends the next job once the child is ready, starting a child first if none runs. */
  private pump(): void {
    if (this.current || this.queue.length === 0) return;
    this.child ??= this.start();
    if (!this.ready) return;
    const current = { ...this.queue.shift()!, id: this.nextId++ };
    this.current = current;
    this.child.ref();
    this.child.channel?.ref();
    const { deadlineMs } = this.options;
    this.arm(deadlineMs, () => this.failure('timeout', `ran past its deadline of ${deadlineMs} ms`));
    this.child.send({ id: current.id, job: current.job, input: current.input } satisfies JobRequest);
  }

  private onMessage(message: JobReply): void {
    if ('ready' in message) {
      this.ready = true;
      this.idle();
    } else if (this.current && message.id === this.current.id) {
      const { resolve, reject } = this.current;
      this.current = undefined;
      this.idle();
      if (message.ok) resolve(message.output);
      else reject(new Error(message.message));
    }
    this.pump();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const said = this.lastWords();
    const error = this.killedFor ?? this.failure('exited', `the child process ${how}${said ? ` (${said})` : ''}`);
    clearTimeout(this.timer);
    // Jobs that never reached a child that could not start would only start it again, and again.
    const failed = [...(this.current ? [this.current] : []), ...(this.ready ? [] : this.queue.splice(0))];
    this.child = undefined;
    this.ready = false;
    this.current = undefined;
    this.killedFor = undefined;
    for (const job of failed) job.reject(error);
    this.pump();
  }

  private start(): ChildProcess {
    const child = spawnChild(this.options);
    this.lastWords = keepLastWords(child);
    child.on('message', (message) => this.onMessage(message as JobReply));
    // Once its stderr is read to the end too: what it said before it died is part of the error.
    child.on('close', (code, signal) => this.onExit(code, signal));
    // An error sending to a child that just died: its exit says what happened.
    child.on('error', () => this.kill(this.failure('exited', 'the child process could not be reached')));
    const startDeadlineMs = this.options.startDeadlineMs ?? 60_000;
    this.arm(startDeadlineMs, () => this.failure('exited', 'the child process did not start in time'));
    return child;
  }

  private kill(why: IsolatedChildError): void {
    if (!this.child) return;
    this.killedFor ??= why;
    this.child.kill('SIGKILL');
  }

  private arm(ms: number, why: () => IsolatedChildError): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kill(why()), ms);
  }

  /** No job runs: nothing here waits for the child, so it keeps no process alive. */
  private idle(): void {
    clearTimeout(this.timer);
    this.child?.unref();
    this.child?.channel?.unref();
  }

  private failure(reason: IsolatedChildError['reason'], message: string): IsolatedChildError {
    const { deadlineMs, maxOldSpaceMb } = this.options;
    return new IsolatedChildError(reason, message, { deadlineMs, maxOldSpaceMb });
  }
}

/** `node` with the child's limits, through sh only to turn core dumps off. */
function spawnChild(options: IsolatedChildOptions): ChildProcess {
  const node = [
    `--max-old-space-size=${options.maxOldSpaceMb}`,
    `--stack-size=${options.stackSizeKb}`,
    ...(path.extname(options.entry) === '.ts' ? ['--import', tsxLoader()] : []),
    options.entry,
  ];
  // V8 aborts on an exhausted heap or stack: a dump of each death an input causes could fill a disk.
  return spawn('/bin/sh', ['-c', 'ulimit -c 0 && exec "$@"', 'sh', process.execPath, ...node], {
    // None of this process's environment (its secrets): the child only reads what it is sent.
    env: {},
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json',
  });
}

/**
 * Keeps the end of what the child writes to stderr, and returns what it said as it died: V8's
 * `FATAL ERROR` line (heap, stack), or the error it stopped with.
 */
function keepLastWords(child: ChildProcess): () => string | undefined {
  let tail = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (tail = (tail + chunk).slice(-8192)));
  (child.stderr as Socket).unref();
  return () => /^(?:FATAL ERROR|\w*Error\b).*$/m.exec(tail)?.[0].slice(0, 300);
}

/** tsx's loader, by its file URL: `--import tsx` would resolve from the working directory. */
function tsxLoader(): string {
  return pathToFileURL(require.resolve('tsx')).href;
}
