import { enteringSandbox, RunSpawnServers } from './run-spawn-server';
import { DelegatingSandbox } from './delegating-sandbox';
import type { PreparedProcess, Sandbox, SandboxProcessSpec } from './sandbox';
import { SANDBOX_INIT } from './sandbox-paths';

/** How long a run's helper sandbox stays up with nothing to do. */
export const HELPER_IDLE_MS = 30_000;

/**
 * The platform's own helpers in a run's workspace (git for each step's diff, the file tools'
 * helper) run in one sandbox per run that stays up between them, instead of a sandbox of their
 * own each: starting a sandbox is most of what such a helper costs (`npm run bench:steps`).
 *
 * That sandbox is what each of them had: the host's root, the run's workspace, home and tmp, no
 * network at all, the run's limits and cgroup. Inside it `sandbox-init -spawn-server -contained`
 * starts each helper in a process group of its own, killed when the helper exits. The server is
 * the sandbox's pid 1 (reap.go): what a run can get run in there (a git filter of its
 * repository) can neither signal it nor reach its pipes. Everything
 * else (the agent's commands, harness CLIs, MCP servers, clones, anything with a network, a
 * gateway, read-only extras or the environment's image) still gets a sandbox of its own.
 */
export class HelperSandbox extends DelegatingSandbox {
  private readonly helpers: RunSpawnServers;

  constructor(inner: Sandbox, idleMs = HELPER_IDLE_MS) {
    super(inner);
    // Each run's helper sandbox is prepared as any of the run's processes (cgroup, limits, no network).
    this.helpers = new RunSpawnServers(
      (runId) =>
        this.inner.prepare({
          runId,
          argv: [SANDBOX_INIT],
          spawnServer: true,
          network: { kind: 'proxy', policy: 'none', onRefusal: () => undefined },
        }),
      { name: "the run's helper sandbox", contained: true, idleMs },
    );
  }

  override prepareRun(runId: string): Promise<void> {
    this.helpers.allow(runId);
    return this.inner.prepareRun(runId);
  }

  override async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    if (!isHelper(spec)) return this.inner.prepare(spec);
    return enteringSandbox(spec, this.inner.workspacePath(spec.runId), this.helpers.launcherOf(spec.runId));
  }

  override async destroyRun(runId: string): Promise<void> {
    this.helpers.stop(runId);
    await this.inner.destroyRun(runId);
    this.helpers.forget(runId);
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
