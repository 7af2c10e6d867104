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
  const { deadlineMs, maxOldSpaceMb } = options;
  const failure = (reason: IsolatedChildError['reason'], message: string) =>
    new IsolatedChildError(reason, message, { deadlineMs, maxOldSpaceMb });
  const queue: Pending[] = [];
  let child: ChildProcess | undefined;
  let ready = false;
  let current: (Pending & { id: number }) | undefined;
  let nextId = 1;
  let timer: NodeJS.Timeout | undefined;
  let killedFor: IsolatedChildError | undefined;
  let stderr = '';

  const kill = (why: IsolatedChildError) => {
    if (!child) return;
    killedFor ??= why;
    child.kill('SIGKILL');
  };
  const arm = (ms: number, why: () => IsolatedChildError) => {
    clearTimeout(timer);
    timer = setTimeout(() => kill(why()), ms);
  };
  const idle = () => {
    clearTimeout(timer);
    child?.unref();
    child?.channel?.unref();
  };

  const pump = () => {
    if (current || queue.length === 0) return;
    if (!child) child = start();
    if (!ready) return;
    current = { ...queue.shift()!, id: nextId++ };
    child.ref();
    child.channel?.ref();
    arm(options.deadlineMs, () => failure('timeout', `ran past its deadline of ${options.deadlineMs} ms`));
    child.send({ id: current.id, job: current.job, input: current.input } satisfies JobRequest);
  };

  const onMessage = (message: JobReply) => {
    if ('ready' in message) {
      ready = true;
      idle();
    } else if (current && message.id === current.id) {
      const { resolve, reject } = current;
      current = undefined;
      idle();
      if (message.ok) resolve(message.output);
      else reject(new Error(message.message));
    }
    pump();
  };

  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const said = lastWords(stderr);
    const error = killedFor ?? failure('exited', `the child process ${how}${said ? ` (${said})` : ''}`);
    clearTimeout(timer);
    // Jobs that never reached a child that could not start would only start it again, and again.
    const failed = ready ? (current ? [current] : []) : [...(current ? [current] : []), ...queue.splice(0)];
    child = undefined;
    ready = false;
    current = undefined;
    killedFor = undefined;
    for (const job of failed) job.reject(error);
    pump();
  };

  const start = (): ChildProcess => {
    const node = [
      `--max-old-space-size=${options.maxOldSpaceMb}`,
      `--stack-size=${options.stackSizeKb}`,
      ...(path.extname(options.entry) === '.ts' ? ['--import', tsxLoader()] : []),
      options.entry,
    ];
    // Through sh only to turn core dumps off: V8 aborts on an exhausted heap or stack, and a
    // dump of each death an input causes could fill a disk.
    const started = spawn('/bin/sh', ['-c', 'ulimit -c 0 && exec "$@"', 'sh', process.execPath, ...node], {
      // None of this process's environment (its secrets): the child only reads what it is sent.
      env: {},
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    stderr = '';
    started.stderr!.setEncoding('utf8');
    started.stderr!.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-8192)));
    (started.stderr as Socket).unref();
    started.on('message', (message) => onMessage(message as JobReply));
    // Once its stderr is read to the end too: what it said before it died is part of the error.
    started.on('close', onExit);
    // An error sending to a child that just died: its exit says what happened.
    started.on('error', () => kill(failure('exited', 'the child process could not be reached')));
    arm(options.startDeadlineMs ?? 60_000, () => failure('exited', 'the child process did not start in time'));
    return started;
  };

  return {
    run: (job, input) =>
      new Promise((resolve, reject) => {
        queue.push({ job, input, resolve, reject });
        pump();
      }),
    get pid() {
      return child?.pid;
    },
    close: () => {
      const error = failure('exited', 'the child process was closed');
      for (const job of queue.splice(0)) job.reject(error);
      kill(error);
    },
  };
}

/** What a child said as it died: V8's `FATAL ERROR` line (heap, stack), or the error it stopped with. */
function lastWords(stderr: string): string | undefined {
  return /^(?:FATAL ERROR|\w*Error\b).*$/m.exec(stderr)?.[0].slice(0, 300);
}

/** tsx's loader, by its file URL: `--import tsx` would resolve from the working directory. */
function tsxLoader(): string {
  return pathToFileURL(require.resolve('tsx')).href;
}
