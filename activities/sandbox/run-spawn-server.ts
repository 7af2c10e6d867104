import { PassThrough } from 'node:stream';
import type { LaunchedProcess, ProcessLauncher } from './launched-process';
import type { PreparedProcess } from './sandbox';
import { startPrepared } from './start-prepared';
import { SpawnServer, type ServerChannel } from './spawn-server';

/**
 * The spawn servers of a worker's runs, one of a kind per run: each started through
 * `prepareServer` (a process of the run, as the sandbox makes them) on first use, and none for a
 * run being destroyed.
 */
export class RunSpawnServers {
  private readonly servers = new Map<string, RunSpawnServer>();
  private readonly destroying = new Set<string>();

  constructor(
    private readonly prepareServer: (runId: string) => Promise<PreparedProcess>,
    private readonly options: RunSpawnServer['options'],
  ) {}

  /** What starts a process through the run's server. */
  launcherOf(runId: string): ProcessLauncher {
    if (this.destroying.has(runId)) throw new Error(`the workspace of run ${runId} is being removed`);
    let server = this.servers.get(runId);
    if (!server) {
      server = new RunSpawnServer(() => this.start(runId), this.options);
      this.servers.set(runId, server);
    }
    return server.launch;
  }

  /** The run may start processes again (its workspace is being made anew). */
  allow(runId: string): void {
    this.destroying.delete(runId);
  }

  /** Stops the run's server and starts none for it until `allow`: its workspace is being removed. */
  stop(runId: string): void {
    this.destroying.add(runId);
    this.servers.get(runId)?.close();
    this.servers.delete(runId);
  }

  /** The run's workspace is gone: the sandbox underneath refuses it from now on, so this need not remember it. */
  forget(runId: string): void {
    this.destroying.delete(runId);
  }

  private async start(runId: string): Promise<StartedServer> {
    if (this.destroying.has(runId)) throw new Error(`the workspace of run ${runId} is being removed`);
    const prepared = await this.prepareServer(runId);
    try {
      const process = startPrepared(prepared, { stdin: true, background: true });
      return { process, release: () => prepared.release() };
    } catch (err) {
      await prepared.release();
      throw err;
    }
  }
}

/** How long a process killed may take to be gone before its server is killed with it. */
const KILL_ESCALATION_MS = 5_000;

/** A spawn server's process once started, and what to free when it ends. */
export interface StartedServer {
  process: LaunchedProcess;
  release(): Promise<void>;
}

/**
 * A spawn server of one run (its helper sandbox's, its sandboxes' launcher on the host), itself
 * started as a process of the run: on first use, again should it die, and stopped when idle.
 */
export class RunSpawnServer {
  private readonly server: SpawnServer;
  private idle: NodeJS.Timeout | undefined;
  /** Stopped for good: its run's workspace is being removed. */
  private closed = false;

  constructor(
    start: () => Promise<StartedServer>,
    readonly options: {
      /** Says what it is in errors: "the run's helper sandbox". */
      name: string;
      /** It runs inside a sandbox (`-contained`): what it starts gets the sandbox's environment under its own. */
      contained: boolean;
      idleMs: number;
    },
  ) {
    this.server = new SpawnServer(() => deferredChannel(start, options.name), options.contained);
  }

  readonly launch: ProcessLauncher = (file, args, options) => {
    if (this.closed) throw new Error(`${this.options.name} was stopped: the run's workspace is being removed`);
    clearTimeout(this.idle);
    const child = this.server.launch(file, args, { ...options, inheritEnv: this.options.contained });
    let closed = false;
    const done = () => {
      closed = true;
      setImmediate(() => this.stopWhenIdle());
    };
    child.once('close', done);
    child.once('error', done);
    if (this.options.contained) {
      // A helper killed is gone within moments; if it is not, something in the helper sandbox
      // holds it (stopped the server, say): that server goes, and the helper with it. (Output
      // already read is delivered first.)
      const signal = child.signal.bind(child);
      let escalating = false;
      child.signal = (sig, signalOptions) => {
        signal(sig, signalOptions);
        if (sig !== 'SIGKILL' || escalating) return;
        escalating = true;
        setTimeout(
          () =>
            setImmediate(() => {
              if (!closed) this.server.closeServerOf(child);
            }),
          KILL_ESCALATION_MS,
        ).unref();
      };
    }
    return child;
  };

  /** Stops it for good (its run's workspace is being removed): a launch after this fails. */
  close(): void {
    this.closed = true;
    clearTimeout(this.idle);
    this.server.close();
  }

  private stopWhenIdle(): void {
    if (this.server.running > 0) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.server.close(), this.options.idleMs);
    this.idle.unref();
  }
}

/**
 * A spawn server reached through a process that is still being started: frames wait for it, and
 * a start that fails ends the server as never started.
 */
function deferredChannel(start: () => Promise<StartedServer>, name: string): ServerChannel {
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
      child.once('close', (code: number | null, sig: string | null) => finish(!spoke, `ended (${sig ?? code})`));
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
