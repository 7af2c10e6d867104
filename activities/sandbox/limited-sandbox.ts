import { joinArgv, type RunCgroups } from './run-cgroups';
import type { PreparedProcess, RunImageRoot, Sandbox, SandboxProcessSpec } from './sandbox';

/**
 * A sandbox whose every process (commands, setup, MCP servers, git, the file helper) joins its
 * run's cgroup before it runs: the run's memory, process count and CPU are limited as a whole.
 * Removing the run kills whatever is left in its group, then the group.
 */
export class LimitedSandbox implements Sandbox {
  constructor(
    private readonly inner: Sandbox,
    private readonly cgroups: RunCgroups,
  ) {}

  get kind(): Sandbox['kind'] {
    return this.inner.kind;
  }

  get runLimits(): string {
    return this.cgroups.description;
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
    return this.inner.prepareRun(runId);
  }

  async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    const prepared = await this.inner.prepare(spec);
    try {
      return { ...prepared, ...joinArgv(await this.cgroups.procsFiles(spec.runId), prepared.file, prepared.args) };
    } catch (err) {
      await prepared.release();
      throw err;
    }
  }

  async destroyRun(runId: string): Promise<void> {
    await this.cgroups.remove(runId);
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
    return this.cgroups.oomKills(runId);
  }
}
