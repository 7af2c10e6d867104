import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import type { LaunchedProcess, LaunchOptions, ProcessLauncher } from './launched-process';
import { BadFrameError, ServedProcess } from './served-process';
import { FRAME, HEADER, MAX_SERVER_FRAME } from './spawn-frames';

/** A running `sandbox-init -spawn-server`, however it was started. */
export interface ServerChannel {
  /** Where frames go to the server. */
  input: Writable;
  /** Where its frames come from. */
  output: Readable;
  /** Whether the server keeps the worker's event loop alive (it does while it runs something). */
  hold(on: boolean): void;
  kill(): void;
  /** Once, after its output has ended: why it ended, and whether it never started. */
  onEnd(callback: (reason: string, neverStarted: boolean) => void): void;
}

/**
 * The worker's processes started by `sandbox-init -spawn-server` (spawner.go), a small process of
 * its own, instead of by forking the worker: a fork copies the page tables of a worker of
 * several hundred MiB and stalls its event loop for milliseconds each time (`npm run
 * bench:spawn`). The server is started on first use and again should it die; what it was running
 * then ends as killed. The server is a child of the worker (`SpawnServer.onHost`), or runs inside
 * a run's helper sandbox (helper-sandbox.ts), where it signals process groups itself.
 */
export class SpawnServer {
  /** The server new processes go to. */
  private server: Server | undefined;
  /** Every server not yet ended (a stopped one until its end is read). */
  private readonly servers = new Set<Server>();
  private nextId = 1;
  private readonly live = new Map<number, ServedProcess>();
  /** Live processes that keep the worker alive (not `background`). */
  private holding = 0;
  /** Processes started through every spawn server of this process, for benchmarks. */
  static launched = 0;

  /** A server started as a child of this process, from the sandbox-init binary. */
  static onHost(binaryPath: string): SpawnServer {
    return new SpawnServer(() => hostChannel(binaryPath), false);
  }

  constructor(
    private readonly startServer: () => ServerChannel,
    /** The server is `-contained`: the pids it reports are not this host's, so groups are signalled through it. */
    private readonly contained: boolean,
  ) {}

  /** Processes it runs now. */
  get running(): number {
    return this.live.size;
  }

  readonly launch: ProcessLauncher = (file, args, options) => {
    const id = this.nextId++;
    if (this.nextId > 0xffff_fff0) this.nextId = 1;
    // Bound to the server that starts it: its frames never go to a server started after that one died.
    let server: Server | undefined;
    const served = new ServedProcess(
      id,
      {
        withStdin: options.stdin ?? false,
        groupsViaServer: this.contained,
        holds: !options.background,
        shellStatus: options.shellStatus ?? false,
      },
      (kind, payload) => {
        if (server && !server.ended) send(server, id, kind, payload);
      },
      () => {
        if (!this.live.has(id)) return;
        this.holding += served.holds ? 1 : -1;
        this.holdWorkerOpen();
      },
    );
    SpawnServer.launched += 1;
    try {
      server = this.ensureServer();
    } catch (err) {
      // The server itself could not be started (Node throws some spawn errors at once).
      process.nextTick(() => served.serverGone(`the spawn server could not start: ${(err as Error).message}`, true));
      return served;
    }
    if (server.ended) {
      process.nextTick(() => served.serverGone('the spawn server ended', true));
      return served;
    }
    this.live.set(id, served);
    server.ids.add(id);
    if (served.holds) this.holding += 1;
    send(server, id, FRAME.start, Buffer.from(JSON.stringify(startRequest(file, args, options))));
    this.holdWorkerOpen();
    return served;
  };

  /** Stops the server; processes it was running are killed with it, and the next launch starts another. */
  close(): void {
    const server = this.server;
    this.server = undefined;
    server?.channel.kill();
  }

  /** Stops the server that runs `process`, if it still does (with whatever else that server runs). */
  closeServerOf(process: LaunchedProcess): void {
    if (!(process instanceof ServedProcess)) return;
    const server = [...this.servers].find((s) => s.ids.has(process.id));
    if (!server) return;
    if (this.server === server) this.server = undefined;
    server.channel.kill();
  }

  /** The server keeps this process alive while it runs something for it, as a child would. */
  private holdWorkerOpen(): void {
    this.server?.channel.hold(this.holding > 0);
  }

  private forget(id: number): void {
    const p = this.live.get(id);
    if (!p) return;
    this.live.delete(id);
    if (p.holds) this.holding -= 1;
  }

  private ensureServer(): Server {
    if (this.server) return this.server;
    const channel = this.startServer();
    // Frames are parsed per server: a dead server's last bytes never run into the next one's.
    let pending = Buffer.alloc(0);
    let garbled = false;
    const server: Server = {
      channel,
      ids: new Set(),
      ended: false,
      parse: (chunk: Buffer) => {
        if (garbled) return;
        // Not the server speaking: it goes (its processes with it), never the worker.
        const garble = () => {
          garbled = true;
          pending = Buffer.alloc(0);
          // No new process goes to it meanwhile.
          if (this.server === server) this.server = undefined;
          channel.kill();
        };
        let buf = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        while (buf.length >= HEADER) {
          const size = buf.readUInt32BE(0);
          // The server sends at most a pipe's read at a time.
          if (size > MAX_SERVER_FRAME) return garble();
          if (buf.length < HEADER + size) break;
          try {
            // A copy: the payload outlives this chunk in the process's streams.
            this.deliver(
              server,
              buf.readUInt32BE(4),
              buf.readUInt8(8),
              Buffer.from(buf.subarray(HEADER, HEADER + size)),
            );
          } catch (err) {
            if (err instanceof BadFrameError) return garble();
            throw err;
          }
          buf = buf.subarray(HEADER + size);
        }
        pending = Buffer.from(buf);
      },
    };
    channel.input.on('error', () => undefined);
    channel.output.on('data', (chunk: Buffer) => server.parse(chunk));
    this.server = server;
    this.servers.add(server);
    // After its output is read to the end: every frame it sent is delivered before its processes are ended.
    channel.onEnd((reason, neverStarted) => {
      server.ended = true;
      this.servers.delete(server);
      if (this.server === server) this.server = undefined;
      const orphans = [...server.ids].map((id) => this.live.get(id)!);
      for (const id of server.ids) this.forget(id);
      server.ids.clear();
      this.holdWorkerOpen();
      for (const p of orphans) p.serverGone(reason, neverStarted);
    });
    return server;
  }

  private deliver(server: Server, id: number, kind: number, payload: Buffer): void {
    if (!server.ids.has(id)) return;
    const p = this.live.get(id)!;
    if (p.receive(kind, payload)) {
      server.ids.delete(id);
      this.forget(id);
      this.holdWorkerOpen();
    }
  }
}

interface Server {
  channel: ServerChannel;
  /** The processes it runs. */
  ids: Set<number>;
  ended: boolean;
  parse: (chunk: Buffer) => void;
}

function send(server: Server, id: number, kind: number, payload: Buffer = Buffer.alloc(0)): void {
  const frame = Buffer.allocUnsafe(HEADER + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  frame.writeUInt32BE(id, 4);
  frame.writeUInt8(kind, 8);
  payload.copy(frame, HEADER);
  server.channel.input.write(frame);
}

/** `sandbox-init -spawn-server` as a child of this process. */
function hostChannel(binaryPath: string): ServerChannel {
  const child = spawn(binaryPath, ['-spawn-server'], { stdio: ['pipe', 'pipe', 'inherit'], env: {} });
  let startError: Error | undefined;
  child.once('error', (err) => (startError = err));
  return {
    input: child.stdin!,
    output: child.stdout!,
    hold(on) {
      // Its pipes are sockets, which hold the event loop as the process does.
      for (const handle of [child, child.stdout as Socket, child.stdin as Socket]) {
        if (on) handle.ref();
        else handle.unref();
      }
    },
    kill: () => child.kill('SIGKILL'),
    onEnd(callback) {
      child.once('close', (code, sig) =>
        callback(
          startError
            ? `the spawn server (${binaryPath}) could not start: ${startError.message}`
            : `the spawn server ended (${sig ?? code})`,
          startError !== undefined,
        ),
      );
    },
  };
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
    inheritEnv: options.inheritEnv ?? false,
    ...(options.stdoutFile ? { stdoutFile: options.stdoutFile } : {}),
  };
}
