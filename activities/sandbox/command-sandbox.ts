import type { NetworkPolicy } from '../../core/network-policy';
import { DelegatingSandbox } from './delegating-sandbox';
import type { NetworkRefusal } from './egress-proxy';
import { HELPER_IDLE_MS } from './helper-sandbox';
import type { ProcessLauncher } from './launched-process';
import { enteringSandbox, RunSpawnServers } from './run-spawn-server';
import type { PreparedProcess, Sandbox, SandboxProcessSpec } from './sandbox';
import { SANDBOX_INIT } from './sandbox-paths';

/**
 * The agent's commands (and the environment's setup commands) run in a sandbox per run and
 * network policy that stays up between them, instead of a sandbox of their own each: starting a
 * sandbox is most of what a short command costs (`npm run bench:sandbox`).
 *
 * That sandbox is what each command had: the environment's image (or the host's root), the run's
 * workspace, home and tmp, the run's network policy through the egress proxy's bridge, its limits
 * and cgroup. Inside it `sandbox-init -spawn-server -contained` starts each command in a process
 * group of its own, killed when the command exits; whatever is left once no command runs is
 * killed too, as a sandbox of its own would have died with its command. A command that leaves the
 * group keeps its output open for a second at most. A command killed by a signal it was not sent
 * from here exits 128+n, as bubblewrap reported it. Refused connections are the running
 * commands'. As in the helper sandbox (helper-sandbox.ts), the server is the sandbox's pid 1: a
 * command's `kill -9 -1` passes it (and the bridge it runs) by, and its pipes are out of reach.
 */
export class CommandSandbox extends DelegatingSandbox {
  private readonly servers = new Map<string, RunSpawnServers>();
  /** The refusal callbacks of the commands running, per run and kind of command sandbox. */
  private readonly running = new Map<string, Set<(refusal: NetworkRefusal) => void>>();
  /** Runs whose workspace is being removed: no command sandbox of any kind starts for them. */
  private readonly destroying = new Set<string>();

  constructor(
    inner: Sandbox,
    private readonly idleMs = HELPER_IDLE_MS,
  ) {
    super(inner);
  }

  override prepareRun(runId: string): Promise<void> {
    this.destroying.delete(runId);
    for (const servers of this.servers.values()) servers.allow(runId);
    return this.inner.prepareRun(runId);
  }

  override async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    if (!spec.commandSandbox || !servable(spec) || spec.network.kind !== 'proxy') return this.inner.prepare(spec);
    if (this.destroying.has(spec.runId)) throw new Error(`the workspace of run ${spec.runId} is being removed`);
    const onImage = spec.onImage ?? false;
    const kind = JSON.stringify([spec.network.policy, onImage]);
    // A run whose policy changed (its environment was edited) keeps no sandbox of the old one up.
    for (const [other, servers] of this.servers) {
      if (other !== kind && !this.running.get(`${spec.runId}\0${other}`)?.size) servers.close(spec.runId);
    }
    const launch = this.serversOf(kind, spec.network.policy, onImage).launcherOf(spec.runId);
    const key = `${spec.runId}\0${kind}`;
    let listeners = this.running.get(key);
    if (!listeners) this.running.set(key, (listeners = new Set()));
    const listener = spec.network.onRefusal;
    listeners.add(listener);
    const shellStatus: ProcessLauncher = (f, a, options) => launch(f, a, { ...options, shellStatus: true });
    return enteringSandbox(spec, this.inner.workspacePath(spec.runId), shellStatus, async () => {
      listeners.delete(listener);
    });
  }

  override async destroyRun(runId: string): Promise<void> {
    this.destroying.add(runId);
    for (const servers of this.servers.values()) servers.stop(runId);
    for (const key of this.running.keys()) if (key.startsWith(`${runId}\0`)) this.running.delete(key);
    await this.inner.destroyRun(runId);
    for (const servers of this.servers.values()) servers.forget(runId);
  }

  /** The command sandboxes of one kind (`kind`: its network policy, on the image or not), one per run. */
  private serversOf(kind: string, policy: NetworkPolicy, onImage: boolean): RunSpawnServers {
    let servers = this.servers.get(kind);
    if (!servers) {
      servers = new RunSpawnServers(
        (runId) =>
          this.inner.prepare({
            runId,
            argv: [SANDBOX_INIT],
            spawnServer: true,
            onImage,
            network: {
              kind: 'proxy',
              policy,
              onRefusal: (refusal) => {
                for (const listener of this.running.get(`${runId}\0${kind}`) ?? []) listener(refusal);
              },
            },
          }),
        { name: "the run's command sandbox", contained: true, idleMs: this.idleMs },
      );
      this.servers.set(kind, servers);
    }
    return servers;
  }
}

/** What a run's command sandbox can serve: nothing it would have to add to the sandbox. */
function servable(spec: SandboxProcessSpec): boolean {
  return !spec.gatewaySocket && !spec.homeless && !spec.readonlyBinds?.length && !spec.spawnServer;
}
