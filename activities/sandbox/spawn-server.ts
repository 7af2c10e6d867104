import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { constants } from 'node:os';
import { Readable, Writable } from 'node:stream';
import type { LaunchedProcess, LaunchOptions, ProcessLauncher } from './launched-process';

/** Frame types (the same list is in sandbox-init/spawner.go). */
const FRAME = {
  start: 1,
  stdin: 2,
  stdinEnd: 3,
  signal: 4,
  pause: 5,
  resume: 6,
  started: 11,
  failed: 12,
  stdout: 13,
  stderr: 14,
  exit: 15,
  stdoutEnd: 16,
  stderrEnd: 17,
  stdinAck: 18,
} as const;

const HEADER = 9;
/** Standard input goes over in chunks of at most this much, each acknowledged before the next. */
const STDIN_CHUNK = 256 * 1024;

const signalName = (n: number) =>
  (Object.entries(constants.signals).find(([, v]) => v === n)?.[0] ?? `SIG${n}`) as NodeJS.Signals;

/**
 * The worker's processes started by `sandbox-init -spawn-server` (spawner.go), a small process of
 * its own, instead of by forking the worker: a fork copies the page tables of a worker of
 * several hundred MiB and stalls its event loop for milliseconds each time (`npm run
 * bench:spawn`). The server is started on first use and again should it die; what it was running
 * then ends as killed.
 */
export class SpawnServer {
  private server: ChildProcess | undefined;
  private nextId = 1;
  private readonly live = new Map<number, ServedProcess>();
  private pending = Buffer.alloc(0);
  /** Processes started through every spawn server of this process, for benchmarks. */
  static launched = 0;

  constructor(private readonly binaryPath: string) {}

  readonly launch: ProcessLauncher = (file, args, options) => {
    const id = this.nextId++;
    if (this.nextId > 0xffff_fff0) this.nextId = 1;
    const served = new ServedProcess(id, (kind, payload) => this.send(id, kind, payload));
    this.live.set(id, served);
    SpawnServer.launched += 1;
    try {
      this.send(id, FRAME.start, Buffer.from(JSON.stringify(startRequest(file, args, options))));
    } catch (err) {
      this.live.delete(id);
      process.nextTick(() => served.fail(err as Error));
    }
    return served;
  };

  /** Stops the server; processes it was running are killed with it. */
  close(): void {
    this.server?.kill('SIGKILL');
  }

  private send(id: number, kind: number, payload: Buffer = Buffer.alloc(0)): void {
    const frame = Buffer.allocUnsafe(HEADER + payload.length);
    frame.writeUInt32BE(payload.length, 0);
    frame.writeUInt32BE(id, 4);
    frame.writeUInt8(kind, 8);
    payload.copy(frame, HEADER);
    this.ensureServer().stdin!.write(frame);
  }

  private ensureServer(): ChildProcess {
    if (this.server) return this.server;
    const server = spawn(this.binaryPath, ['-spawn-server'], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: {},
    });
    this.server = server;
    // It never keeps the worker alive.
    server.unref();
    for (const stream of [server.stdin, server.stdout] as unknown as {
      unref?: () => void;
      _handle?: { unref(): void };
    }[])
      stream._handle?.unref();
    server.stdin!.on('error', () => undefined);
    server.stdout!.on('data', (chunk: Buffer) => this.receive(chunk));
    const gone = (reason: string) => {
      if (this.server !== server) return;
      this.server = undefined;
      this.pending = Buffer.alloc(0);
      const orphans = [...this.live.values()];
      this.live.clear();
      for (const p of orphans) p.serverGone(reason);
    };
    server.once('error', (err) => gone(`the spawn server could not run: ${err.message}`));
    server.once('exit', (code, sig) => gone(`the spawn server ended (${sig ?? code})`));
    return server;
  }

  private receive(chunk: Buffer): void {
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (buf.length >= HEADER) {
      const size = buf.readUInt32BE(0);
      if (buf.length < HEADER + size) break;
      const id = buf.readUInt32BE(4);
      const kind = buf.readUInt8(8);
      // A copy: the payload outlives this chunk in the process's streams.
      const payload = Buffer.from(buf.subarray(HEADER, HEADER + size));
      buf = buf.subarray(HEADER + size);
      const p = this.live.get(id);
      if (!p) continue;
      if (p.receive(kind, payload)) this.live.delete(id);
    }
    this.pending = Buffer.from(buf);
  }
}

function startRequest(file: string, args: string[], options: LaunchOptions) {
  return {
    file,
    args,
    env: Object.entries(options.env)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${v}`),
    dir: options.cwd,
    setsid: options.detached ?? false,
    stdin: options.stdin ?? false,
  };
}

/** One process the server started, as the worker sees it. */
class ServedProcess extends EventEmitter implements LaunchedProcess {
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable | null;
  pid: number | undefined;
  /** A group signal sent before the server said the process started. */
  private groupSignalOnStart: NodeJS.Signals | undefined;
  private exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private ended = 0;
  private failed = false;
  private outputPaused = false;
  /** Callbacks of standard-input chunks not yet acknowledged. */
  private readonly acks: ((err?: Error) => void)[] = [];

  constructor(
    readonly id: number,
    private readonly send: (kind: number, payload?: Buffer) => void,
  ) {
    super();
    const read = () => {
      if (this.outputPaused && !this.exited && !this.failed) {
        this.outputPaused = false;
        this.trySend(FRAME.resume);
      }
    };
    this.stdout = new Readable({ read });
    this.stderr = new Readable({ read });
    this.stdin = new Writable({
      write: (chunk: Buffer, _enc, callback) => {
        const parts: Buffer[] = [];
        for (let at = 0; at < chunk.length; at += STDIN_CHUNK) parts.push(chunk.subarray(at, at + STDIN_CHUNK));
        let left = parts.length;
        let failure: Error | undefined;
        const one = (err?: Error) => {
          failure ??= err;
          if (--left === 0) callback(failure);
        };
        if (parts.length === 0) return callback();
        for (const part of parts) {
          this.acks.push(one);
          this.trySend(FRAME.stdin, part);
        }
      },
      final: (callback) => {
        this.trySend(FRAME.stdinEnd);
        callback();
      },
    });
  }

  signal(sig: NodeJS.Signals, { group = false } = {}): void {
    if (group) {
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
    if (!this.exited) this.trySend(FRAME.signal, Buffer.from(JSON.stringify({ signal: constants.signals[sig] })));
  }

  /** Says whether the process is done with (exited and its output ended). */
  receive(kind: number, payload: Buffer): boolean {
    switch (kind) {
      case FRAME.started:
        this.pid = (JSON.parse(payload.toString('utf8')) as { pid: number }).pid;
        if (this.groupSignalOnStart) this.signal(this.groupSignalOnStart, { group: true });
        return false;
      case FRAME.failed: {
        const { message, code } = JSON.parse(payload.toString('utf8')) as { message: string; code: string };
        this.fail(Object.assign(new Error(message), { code }));
        return true;
      }
      case FRAME.stdout:
      case FRAME.stderr: {
        const stream = kind === FRAME.stdout ? this.stdout : this.stderr;
        if (!stream.destroyed && !stream.push(payload) && !this.outputPaused) {
          this.outputPaused = true;
          this.trySend(FRAME.pause);
        }
        return false;
      }
      case FRAME.stdoutEnd:
      case FRAME.stderrEnd:
        (kind === FRAME.stdoutEnd ? this.stdout : this.stderr).push(null);
        this.ended += 1;
        return this.maybeClose();
      case FRAME.exit: {
        const { code, signal } = JSON.parse(payload.toString('utf8')) as { code: number; signal: number };
        this.exited = { code: signal ? null : code, signal: signal ? signalName(signal) : null };
        this.emit('exit', this.exited.code, this.exited.signal);
        return this.maybeClose();
      }
      case FRAME.stdinAck:
        this.acks.shift()?.(payload.length ? Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }) : undefined);
        return false;
      default:
        return false;
    }
  }

  fail(err: Error): void {
    this.failed = true;
    this.failAcks();
    this.emit('error', err);
    this.stdout.push(null);
    this.stderr.push(null);
  }

  /** The server died: the process went with it (its sandbox dies with its parent). */
  serverGone(reason: string): void {
    if (this.exited) {
      this.ended = 2;
      this.stdout.push(null);
      this.stderr.push(null);
      this.maybeClose();
      return;
    }
    if (this.listenerCount('exit') === 0 && this.listenerCount('close') === 0) return this.fail(new Error(reason));
    this.exited = { code: null, signal: 'SIGKILL' };
    this.emit('exit', null, 'SIGKILL');
    this.stdout.push(null);
    this.stderr.push(null);
    this.ended = 2;
    this.maybeClose();
  }

  private maybeClose(): boolean {
    if (!this.exited || this.ended < 2) return false;
    this.failAcks();
    // After the streams' own 'end' events, as Node's ChildProcess does.
    setImmediate(() => this.emit('close', this.exited!.code, this.exited!.signal));
    return true;
  }

  private failAcks(): void {
    for (const ack of this.acks.splice(0)) ack(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
  }

  private trySend(kind: number, payload?: Buffer): void {
    try {
      this.send(kind, payload);
    } catch {
      // the server is gone; serverGone says so
    }
  }
}
