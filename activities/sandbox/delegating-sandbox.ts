import type { ProcessLauncher } from './launched-process';
import type { RunDiskUsage } from './run-disks';
import type { PreparedProcess, RunImageRoot, Sandbox, SandboxProcessSpec } from './sandbox';

/** A sandbox that adds one thing to another (limits, a launcher, a shared helper sandbox) and passes the rest through. */
export abstract class DelegatingSandbox implements Sandbox {
  constructor(
    /** The sandbox underneath: where what this layer does not change is prepared. */
    readonly inner: Sandbox,
  ) {}

  get kind(): Sandbox['kind'] {
    return this.inner.kind;
  }

  get runLimits(): string | undefined {
    return this.inner.runLimits;
  }

  get diskLimits(): string | undefined {
    return this.inner.diskLimits;
  }

  get hostLauncher(): ProcessLauncher | undefined {
    return this.inner.hostLauncher;
  }

  get processUid(): number | undefined {
    return this.inner.processUid;
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

  runDiskUsage(runId: string): Promise<RunDiskUsage | undefined> {
    return this.inner.runDiskUsage?.(runId) ?? Promise.resolve(undefined);
  }

  prepareRun(runId: string): Promise<void> {
    return this.inner.prepareRun(runId);
  }

  prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    return this.inner.prepare(spec);
  }

  prepareRunSpawnServer(runId: string): Promise<PreparedProcess> {
    if (!this.inner.prepareRunSpawnServer) throw new Error('this sandbox has no spawn server per run');
    return this.inner.prepareRunSpawnServer(runId);
  }

  destroyRun(runId: string): Promise<void> {
    return this.inner.destroyRun(runId);
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

  runPids(runId: string): Promise<number[] | undefined> {
    return this.inner.runPids?.(runId) ?? Promise.resolve(undefined);
  }
}
