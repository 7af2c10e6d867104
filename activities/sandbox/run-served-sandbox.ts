import { DelegatingSandbox } from './delegating-sandbox';
import { RunSpawnServers } from './run-spawn-server';
import type { PreparedProcess, Sandbox, SandboxProcessSpec } from './sandbox';

/** How long a run's spawn server stays up with nothing to do. */
export const RUN_SPAWN_SERVER_IDLE_MS = 30_000;

/**
 * Each run's sandboxes started by a spawn server of the run's own on the host side, which joined
 * the run's cgroup and took the sandbox's host uid (without new privileges) once, when it
 * started: a sandbox then needs neither again (the cgroup join, a shell that writes into
 * `cgroup.procs`, and `setpriv`, about 4 ms of each sandbox's start; `npm run bench:steps`). A
 * process forked there is in the run's cgroup from its first instruction, as one that joined.
 * The server is started on first use, again should it die, and stopped when idle or with the
 * run's workspace; it dies with the worker.
 *
 * Its threads (about four: GOMAXPROCS=1, and it waits on its processes in the netpoller, not in
 * a thread each, sandbox-init/wait.go) count against the run's process limit. A run at that
 * limit makes its sandboxes fail to start, as before; should the server itself ever need a new
 * thread then, the Go runtime would end it, with the run's own sandboxes, never the worker's or
 * another run's.
 */
export class RunServedSandbox extends DelegatingSandbox {
  private readonly servers: RunSpawnServers;

  constructor(inner: Sandbox, idleMs = RUN_SPAWN_SERVER_IDLE_MS) {
    super(inner);
    this.servers = new RunSpawnServers((runId) => this.prepareRunSpawnServer(runId), {
      name: "the run's spawn server",
      contained: false,
      idleMs,
    });
  }

  override prepareRun(runId: string): Promise<void> {
    this.servers.allow(runId);
    return this.inner.prepareRun(runId);
  }

  override async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    const prepared = await this.inner.prepare(spec);
    if (!prepared.inRun) return prepared;
    try {
      return { ...prepared, inRun: { ...prepared.inRun, launch: this.servers.launcherOf(spec.runId) } };
    } catch (err) {
      await prepared.release();
      throw err;
    }
  }

  override async destroyRun(runId: string): Promise<void> {
    this.servers.stop(runId);
    await this.inner.destroyRun(runId);
    this.servers.forget(runId);
  }
}
