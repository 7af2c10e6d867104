import { DelegatingSandbox } from './delegating-sandbox';
import { joinArgv, type RunCgroups } from './run-cgroups';
import type { PreparedProcess, Sandbox, SandboxProcessSpec } from './sandbox';

/**
 * A sandbox whose every process (commands, setup, MCP servers, git, the file helper) joins its
 * run's cgroup before it runs: the run's memory, process count and CPU are limited as a whole.
 * Removing the run kills whatever is left in its group, then the group.
 */
export class LimitedSandbox extends DelegatingSandbox {
  constructor(
    inner: Sandbox,
    private readonly cgroups: RunCgroups,
  ) {
    super(inner);
  }

  override get runLimits(): string {
    return this.cgroups.description;
  }

  override async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    return this.joined(spec.runId, await this.inner.prepare(spec));
  }

  override async prepareRunSpawnServer(runId: string): Promise<PreparedProcess> {
    return this.joined(runId, await super.prepareRunSpawnServer(runId));
  }

  /** The process, joining the run's group first (what it starts `inRun` is in the group already). */
  private async joined(runId: string, prepared: PreparedProcess): Promise<PreparedProcess> {
    try {
      return { ...prepared, ...joinArgv(await this.cgroups.procsFiles(runId), prepared.file, prepared.args) };
    } catch (err) {
      await prepared.release();
      throw err;
    }
  }

  override async destroyRun(runId: string): Promise<void> {
    await this.cgroups.remove(runId);
    await this.inner.destroyRun(runId);
  }

  override oomKills(runId: string): Promise<number> {
    return this.cgroups.oomKills(runId);
  }

  override runPids(runId: string): Promise<number[] | undefined> {
    return this.cgroups.pids(runId);
  }
}
