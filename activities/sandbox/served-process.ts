import { EventEmitter } from 'node:events';
import { constants } from 'node:os';
import { Readable, Writable } from 'node:stream';
import type { LaunchedProcess } from './launched-process';
import { FRAME, STDIN_CHUNK } from './spawn-frames';

const signalName = (n: number) =>
  (Object.entries(constants.signals).find(([, v]) => v === n)?.[0] ?? `SIG${n}`) as NodeJS.Signals;

const epipe = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });

/** The server (a sandbox that serves processes, say) ended before it started the process. */
export class ServerNotStartedError extends Error {}

/** A frame the spawn server does not send: whoever sent it, its channel is ended. */
export class BadFrameError extends Error {
  constructor() {
    super('the spawn server sent a bad frame');
  }
}

function parseObject(payload: Buffer): Record<string, unknown> {
  let message: unknown;
  try {
    message = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new BadFrameError();
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) throw new BadFrameError();
  return message as Record<string, unknown>;
}

/** One process the server started, as the worker sees it. */
export class ServedProcess extends EventEmitter implements LaunchedProcess {
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable | null;
  pid: number | undefined;
  /** A group signal sent before the server said the process started. */
  private groupSignalOnStart: NodeJS.Signals | undefined;
  private exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private ended = 0;
  private stdinEnded = false;
  private gone = false;
  /** Per output stream: the server was asked to hold it back. */
  private readonly paused = [false, false];
  /** Per output stream: the server said it ended. */
  private readonly streamEnded = [false, false];
  /** The callback of the standard-input chunk awaiting its acknowledgement. */
  private ack: ((err?: Error) => void) | undefined;

  /** Keeps the worker alive while it runs. */
  holds: boolean;
  /** The server signals the process's group (its pids are not this host's). */
  private readonly groupsViaServer: boolean;
  /** LaunchOptions.shellStatus. */
  private readonly shellStatus: boolean;
  /** A signal was sent to it from here. */
  private signalled = false;

  constructor(
    readonly id: number,
    options: { withStdin: boolean; groupsViaServer: boolean; holds: boolean; shellStatus?: boolean },
    private readonly send: (kind: number, payload?: Buffer) => void,
    private readonly holdChanged: () => void = () => undefined,
  ) {
    super();
    const { withStdin } = options;
    this.holds = options.holds;
    this.groupsViaServer = options.groupsViaServer;
    this.shellStatus = options.shellStatus ?? false;
    const output = (index: 0 | 1) => {
      const stream = new Readable({ read: () => this.resume(index) });
      // A reader that gave up (a failed pipeline) no longer holds the process's output back.
      stream.once('close', () => this.resume(index));
      return stream;
    };
    this.stdout = output(0);
    this.stderr = output(1);
    this.stdin = withStdin
      ? new Writable({
          write: (chunk: Buffer, _enc, callback) => this.writeStdin(chunk, callback),
          final: (callback) => {
            this.endStdin();
            callback();
          },
          // A caller that gives up on the input (a failed pipeline) still closes it.
          destroy: (err, callback) => {
            this.endStdin();
            this.ack = undefined;
            callback(err);
          },
        })
      : null;
  }

  /** Sends a chunk in parts, each once the last is acknowledged, so the server never waits on this process's input. */
  private writeStdin(chunk: Buffer, callback: (err?: Error) => void, at = 0): void {
    if (this.exited || this.gone) return callback(epipe());
    if (at >= chunk.length) return callback();
    this.ack = (err) => (err ? callback(err) : this.writeStdin(chunk, callback, at + STDIN_CHUNK));
    this.trySend(FRAME.stdin, chunk.subarray(at, at + STDIN_CHUNK));
  }

  private endStdin(): void {
    if (this.stdinEnded || this.exited || this.gone) return;
    this.stdinEnded = true;
    this.trySend(FRAME.stdinEnd);
  }

  private resume(index: 0 | 1): void {
    if (!this.paused[index] || this.gone) return;
    this.paused[index] = false;
    this.trySend(FRAME.resume, Buffer.of(index));
  }

  /** Whether it keeps the worker alive from now on (a spawn server of its own does while that runs something). */
  hold(on: boolean): void {
    if (on === this.holds) return;
    this.holds = on;
    this.holdChanged();
  }

  signal(sig: NodeJS.Signals, { group = false } = {}): void {
    if (!this.exited) this.signalled = true;
    if (group && !this.groupsViaServer) {
      // What the process left in its group may outlive it: the group is signalled from here.
      if (this.pid === undefined) {
        this.groupSignalOnStart = sig;
        return;
      }
      try {
        process.kill(-this.pid, sig);
      } catch {
        // the group is empty
      }
      return;
    }
    // The server signals through the process's pidfd: never another process that took its pid.
    // A group is signalled after the exit too, until the server is done with the process: an exit
    // said by something else than the server leaves nothing running behind the worker's back.
    if (!this.gone && (!this.exited || (group && this.groupsViaServer)))
      this.trySend(FRAME.signal, Buffer.from(JSON.stringify({ signal: constants.signals[sig], group })));
  }

  /** Says whether the server is done with the process (it exited and its output ended). */
  receive(kind: number, payload: Buffer): boolean {
    // Nothing in a sandbox can reach its server's pipes (it is the sandbox's pid 1, reap.go); all
    // the same, a frame that is not what the server sends ends that server's channel
    // (BadFrameError, spawn-server.ts) rather than be taken for a process's.
    const message = kind === FRAME.started || kind === FRAME.failed || kind === FRAME.exit ? parseObject(payload) : {};
    switch (kind) {
      case FRAME.started: {
        const pid = message.pid;
        if (!Number.isSafeInteger(pid) || (pid as number) <= 0 || this.pid !== undefined) throw new BadFrameError();
        this.pid = pid as number;
        if (this.groupSignalOnStart) this.signal(this.groupSignalOnStart, { group: true });
        return false;
      }
      case FRAME.failed: {
        if (this.pid !== undefined) throw new BadFrameError();
        this.fail(Object.assign(new Error(String(message.message)), { code: String(message.code) }));
        return true;
      }
      case FRAME.stdout:
      case FRAME.stderr: {
        const index = kind === FRAME.stdout ? 0 : 1;
        const stream = index === 0 ? this.stdout : this.stderr;
        if (stream.readableEnded || this.streamEnded[index]) throw new BadFrameError();
        // Output nobody reads any more is dropped, never held back.
        if (!stream.destroyed && !stream.push(payload) && !this.paused[index]) {
          this.paused[index] = true;
          this.trySend(FRAME.pause, Buffer.of(index));
        }
        return false;
      }
      case FRAME.stdoutEnd:
      case FRAME.stderrEnd: {
        const index = kind === FRAME.stdoutEnd ? 0 : 1;
        if (this.streamEnded[index]) throw new BadFrameError();
        this.streamEnded[index] = true;
        (index === 0 ? this.stdout : this.stderr).push(null);
        this.ended += 1;
        return this.maybeClose();
      }
      case FRAME.exit: {
        const { code, signal } = message;
        if (
          this.exited ||
          typeof code !== 'number' ||
          typeof signal !== 'number' ||
          !Number.isInteger(code) ||
          code < -1 ||
          code > 255 ||
          !Number.isInteger(signal) ||
          signal < 0 ||
          signal > 64
        )
          throw new BadFrameError();
        this.exited =
          signal && this.shellStatus && !this.signalled
            ? { code: 128 + signal, signal: null }
            : { code: signal ? null : code, signal: signal ? signalName(signal) : null };
        this.emit('exit', this.exited.code, this.exited.signal);
        return this.maybeClose();
      }
      case FRAME.stdinAck: {
        const ack = this.ack;
        this.ack = undefined;
        ack?.(payload.length ? epipe() : undefined);
        return false;
      }
      default:
        return false;
    }
  }

  private fail(err: Error): void {
    this.gone = true;
    this.failAck();
    this.emit('error', err);
    this.stdout.push(null);
    this.stderr.push(null);
  }

  /** The server died or spoke nonsense: the process went with it (its sandbox dies with its parent). */
  serverGone(reason: string, neverStarted: boolean): void {
    if (this.gone) return;
    if (neverStarted && !this.exited) return this.fail(new ServerNotStartedError(reason));
    this.gone = true;
    if (!this.exited) {
      this.exited = { code: null, signal: 'SIGKILL' };
      this.emit('exit', null, 'SIGKILL');
    }
    if (!this.stdout.readableEnded) this.stdout.push(null);
    if (!this.stderr.readableEnded) this.stderr.push(null);
    this.ended = 2;
    this.maybeClose();
  }

  private maybeClose(): boolean {
    if (!this.exited || this.ended < 2) return false;
    this.gone = true;
    this.failAck();
    // Once its output has ended, as Node's ChildProcess does: whether or not a reader has taken
    // all of it yet (a reader that never reads stderr still sees the process close).
    const { code, signal } = this.exited;
    setImmediate(() => this.emit('close', code, signal));
    return true;
  }

  private failAck(): void {
    const ack = this.ack;
    this.ack = undefined;
    ack?.(epipe());
  }

  private trySend(kind: number, payload?: Buffer): void {
    try {
      this.send(kind, payload);
    } catch {
      // the server is gone; its 'close' ends this process
    }
  }
}
