import path from 'node:path';
import { PassThrough } from 'node:stream';
import { forkLauncher, type LaunchedProcess, type ProcessLauncher } from './launched-process';
import type { PreparedProcess, RunImageRoot, Sandbox, SandboxProcessSpec } from './sandbox';
import { SANDBOX_INIT } from './sandbox-paths';
import { SpawnServer, type ServerChannel } from './spawn-server';

/** How long a run's helper sandbox stays up with nothing to do. */
export const HELPER_IDLE_MS = 30_000;

/**
 * The platform's own helpers in a run's workspace (git for each step's diff, the file tools'
 * helper) run in one sandbox per run that stays up between them, instead of a sandbox of their
 * own each: starting a sandbox is most of what such a helper costs (`npm run bench:steps`).
 *
 * That sandbox is what each of them had: the host's root, the run's workspace, home and tmp, no
 * network at all, the run's limits and cgroup. Inside it `sandbox-init -spawn-server -contained`
 * starts each helper in a process group of its own, killed when the helper exits. Everything
 * else (the agent's commands, harness CLIs, MCP servers, clones, anything with a network, a
 * gateway, read-only extras or the environment's image) still gets a sandbox of its own.
 */
export class HelperSandbox implements Sandbox {
  private readonly helpers = new Map<string, RunHelper>();
  /** Runs being destroyed: no helper of theirs may start meanwhile. */
  private readonly destroying = new Set<string>();

  constructor(
    /** Where everything else, and the helper sandboxes themselves, are prepared. */
    readonly inner: Sandbox,
    private readonly idleMs = HELPER_IDLE_MS,
  ) {}

  get kind(): Sandbox['kind'] {
    return this.inner.kind;
  }

  get runLimits(): string | undefined {
    return this.inner.runLimits;
  }

  workspacePath(runId: string): string {
    return this.inner.workspacePath(runId);
  }

  homePath(runId: string): string {
    return this.inner.homePath(runId);
  }

  gatewayUrl(gateway: { tcpUrl(): Promise<string> }): Promise<string> | string {
    return this.inner.gatewayUrl(gateway);
  }

  runPaths(runId: string): string[] {
    return this.inner.runPaths(runId);
  }

  prepareRun(runId: string): Promise<void> {
    this.destroying.delete(runId);
    return this.inner.prepareRun(runId);
  }

  async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    if (!isHelper(spec)) return this.inner.prepare(spec);
    if (this.destroying.has(spec.runId)) throw new Error(`the workspace of run ${spec.runId} is being removed`);
    let helper = this.helpers.get(spec.runId);
    if (!helper) {
      helper = new RunHelper(() => this.startHelper(spec.runId), this.idleMs);
      this.helpers.set(spec.runId, helper);
    }
    const [file, ...args] = spec.argv;
    return {
      file,
      args,
      // On top of the helper sandbox's own environment, as sandbox-init would put them.
      env: spec.env ?? {},
      cwd: path.posix.join(this.inner.workspacePath(spec.runId), spec.cwd ?? ''),
      launch: helper.launch,
      entersSandbox: true,
      release: async () => undefined,
    };
  }

  /** The run's helper sandbox: prepared as any of the run's processes (cgroup, limits, no network). */
  private async startHelper(runId: string): Promise<{ process: LaunchedProcess; release(): Promise<void> }> {
    if (this.destroying.has(runId)) throw new Error(`the workspace of run ${runId} is being removed`);
    const prepared = await this.inner.prepare({
      runId,
      argv: [SANDBOX_INIT, '-spawn-server', '-contained'],
      network: { kind: 'proxy', policy: 'none', onRefusal: () => undefined },
    });
    try {
      const process = (prepared.launch ?? forkLauncher)(prepared.file, prepared.args, {
        cwd: prepared.cwd,
        env: prepared.env,
        stdin: true,
        background: true,
      });
      return { process, release: () => prepared.release() };
    } catch (err) {
      await prepared.release();
      throw err;
    }
  }

  async destroyRun(runId: string): Promise<void> {
    this.destroying.add(runId);
    this.helpers.get(runId)?.close();
    this.helpers.delete(runId);
    await this.inner.destroyRun(runId);
  }

  useImage(runId: string, image: RunImageRoot | undefined): Promise<void> {
    if (!this.inner.useImage) throw new Error('this sandbox cannot use images');
    return this.inner.useImage(runId, image);
  }

  shell(runId: string): Promise<string> {
    return this.inner.shell?.(runId) ?? Promise.resolve('/bin/bash');
  }

  oomKills(runId: string): Promise<number> {
    return this.inner.oomKills?.(runId) ?? Promise.resolve(0);
  }

  /** Stops every run's helper sandbox (they start again when needed). */
  closeAll(): void {
    for (const helper of this.helpers.values()) helper.close();
  }
}

/** What a run's helper sandbox serves: the platform's helpers without network, extras or image. */
function isHelper(spec: SandboxProcessSpec): boolean {
  return (
    spec.network.kind === 'proxy' &&
    spec.network.policy === 'none' &&
    !spec.gatewaySocket &&
    !spec.homeless &&
    !spec.readonlyBinds?.length &&
    !spec.onImage
  );
}

/** One run's helper sandbox: started on first use, again should it die, and stopped when idle. */
class RunHelper {
  private readonly server: SpawnServer;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    start: () => Promise<{ process: LaunchedProcess; release(): Promise<void> }>,
    private readonly idleMs: number,
  ) {
    this.server = new SpawnServer(() => deferredChannel(start), true);
  }

  readonly launch: ProcessLauncher = (file, args, options) => {
    clearTimeout(this.idle);
    const child = this.server.launch(file, args, { ...options, inheritEnv: true });
    const done = () => setImmediate(() => this.stopWhenIdle());
    child.once('close', done);
    child.once('error', done);
    return child;
  };

  close(): void {
    clearTimeout(this.idle);
    this.server.close();
  }

  private stopWhenIdle(): void {
    if (this.server.running > 0) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.server.close(), this.idleMs);
    this.idle.unref();
  }
}

/**
 * A spawn server reached through a process that is still being started: frames wait for it, and
 * a start that fails ends the server as never started.
 */
function deferredChannel(start: () => Promise<{ process: LaunchedProcess; release(): Promise<void> }>): ServerChannel {
  const input = new PassThrough();
  const output = new PassThrough();
  let process: LaunchedProcess | undefined;
  let killed = false;
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
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2048)));
      child.stdout.pipe(output, { end: false });
      input.pipe(child.stdin!);
      child.stdin!.on('error', () => undefined);
      const finish = (neverStarted: boolean, why: string) => {
        void release().catch(() => undefined);
        end(`the run's helper sandbox ${why}${stderr.trim() ? `: ${stderr.trim()}` : ''}`, neverStarted);
      };
      child.once('error', (err: Error) => finish(true, `could not start (${err.message})`));
      child.once('close', (code: number | null, sig: string | null) => finish(false, `ended (${sig ?? code})`));
      if (killed) child.signal('SIGKILL');
    },
    (err: unknown) => end(`the run's helper sandbox could not start: ${(err as Error).message}`, true),
  );
  return {
    input,
    output,
    hold: () => undefined,
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
