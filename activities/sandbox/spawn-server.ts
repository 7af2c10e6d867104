import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { LaunchOptions, ProcessLauncher } from './launched-process';
import { ServedProcess } from './served-process';
import { FRAME, HEADER } from './spawn-frames';

/**
 * The worker's processes started by `sandbox-init -spawn-server` (spawner.go), a small process of
 * its own, instead of by forking the worker: a fork copies the page tables of a worker of
 * several hundred MiB and stalls its event loop for milliseconds each time (`npm run
 * bench:spawn`). The server is started on first use and again should it die; what it was running
 * then ends as killed.
 */
export class SpawnServer {
  private server: { process: ChildProcess; parse: (chunk: Buffer) => void } | undefined;
  private nextId = 1;
  private readonly live = new Map<number, ServedProcess>();
  /** Processes started through every spawn server of this process, for benchmarks. */
  static launched = 0;

  constructor(private readonly binaryPath: string) {}

  readonly launch: ProcessLauncher = (file, args, options) => {
    const id = this.nextId++;
    if (this.nextId > 0xffff_fff0) this.nextId = 1;
    const served = new ServedProcess(id, options.stdin ?? false, (kind, payload) => this.send(id, kind, payload));
    this.live.set(id, served);
    SpawnServer.launched += 1;
    try {
      this.send(id, FRAME.start, Buffer.from(JSON.stringify(startRequest(file, args, options))));
    } catch (err) {
      // The server itself could not be started (Node throws some spawn errors at once).
      this.live.delete(id);
      process.nextTick(() => served.serverGone(`the spawn server could not start: ${(err as Error).message}`, true));
      return served;
    }
    this.holdWorkerOpen();
    return served;
  };

  /** Stops the server; processes it was running are killed with it. */
  close(): void {
    this.server?.process.kill('SIGKILL');
  }

  private send(id: number, kind: number, payload: Buffer = Buffer.alloc(0)): void {
    const frame = Buffer.allocUnsafe(HEADER + payload.length);
    frame.writeUInt32BE(payload.length, 0);
    frame.writeUInt32BE(id, 4);
    frame.writeUInt8(kind, 8);
    payload.copy(frame, HEADER);
    this.ensureServer().process.stdin!.write(frame);
  }

  /** The server keeps this process alive while it runs something for it, as a child would. */
  private holdWorkerOpen(): void {
    const server = this.server?.process;
    if (!server) return;
    const hold = this.live.size > 0;
    // Its pipes are sockets, which hold the event loop as the process does.
    for (const handle of [server, server.stdout as Socket, server.stdin as Socket]) {
      if (hold) handle.ref();
      else handle.unref();
    }
  }

  private ensureServer(): NonNullable<SpawnServer['server']> {
    if (this.server) return this.server;
    const child = spawn(this.binaryPath, ['-spawn-server'], { stdio: ['pipe', 'pipe', 'inherit'], env: {} });
    // Frames are parsed per server: a dead server's last bytes never run into the next one's.
    let pending = Buffer.alloc(0);
    const server = {
      process: child,
      parse: (chunk: Buffer) => {
        let buf = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        while (buf.length >= HEADER) {
          const size = buf.readUInt32BE(0);
          if (buf.length < HEADER + size) break;
          // A copy: the payload outlives this chunk in the process's streams.
          this.deliver(buf.readUInt32BE(4), buf.readUInt8(8), Buffer.from(buf.subarray(HEADER, HEADER + size)));
          buf = buf.subarray(HEADER + size);
        }
        pending = Buffer.from(buf);
      },
    };
    child.stdin!.on('error', () => undefined);
    child.stdout!.on('data', (chunk: Buffer) => server.parse(chunk));
    this.server = server;
    let startError: Error | undefined;
    child.once('error', (err) => (startError = err));
    // After its output is read to the end: every frame it sent is delivered before its processes are ended.
    child.once('close', (code, sig) => {
      if (this.server !== server) return;
      this.server = undefined;
      const orphans = [...this.live.values()];
      this.live.clear();
      const reason = startError
        ? `the spawn server (${this.binaryPath}) could not start: ${startError.message}`
        : `the spawn server ended (${sig ?? code})`;
      for (const p of orphans) p.serverGone(reason, startError !== undefined);
    });
    return server;
  }

  private deliver(id: number, kind: number, payload: Buffer): void {
    const p = this.live.get(id);
    if (!p) return;
    if (p.receive(kind, payload)) {
      this.live.delete(id);
      this.holdWorkerOpen();
    }
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
