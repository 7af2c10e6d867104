import type { ProcessLauncher } from './launched-process';
import path from 'node:path';
import type { PreparedProcess, SandboxProcessSpec } from './sandbox';
import { startPrepared } from './start-prepared';
import { deferredChannel, type StartedServer } from './deferred-channel';
import { SpawnServer } from './spawn-server';

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

  /** Stops the run's server, if it has one; its next process starts another. */
  close(runId: string): void {
    this.servers.get(runId)?.close();
    this.servers.delete(runId);
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

/**
 * `spec` as a process that a sandbox already running starts through its server (`launch`): its
 * variables on top of the sandbox's own, as sandbox-init would put them, in `workspacePath`.
 */
export function enteringSandbox(
  spec: SandboxProcessSpec,
  workspacePath: string,
  launch: ProcessLauncher,
  release: () => Promise<void> = async () => undefined,
): PreparedProcess {
  const [file, ...args] = spec.argv;
  return {
    file,
    args,
    env: spec.env ?? {},
    cwd: path.posix.join(workspacePath, spec.cwd ?? ''),
    launch,
    entersSandbox: true,
    release,
  };
}

/** How long a process killed may take to be gone before its server is killed with it. */
const KILL_ESCALATION_MS = 5_000;

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
    let gone = false;
    const done = () => {
      gone = true;
      setImmediate(() => this.stopWhenIdle());
    };
    child.once('close', done);
    child.once('error', done);
    if (this.options.contained) {
      // A helper killed is gone within moments; if it is not, its server is not acting on it
      // (starved, or stuck in the kernel): that server goes, and the helper with it. (Output
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
              if (!gone) this.server.closeServerOf(child);
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
