import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { runStateDir, workspaceDir } from '../workspace/workspace-paths';
import { baseEnvironment, type PreparedProcess, type Sandbox, type SandboxProcessSpec } from './sandbox';

/**
 * `AGENT_SANDBOX=none`: processes run as the worker's user, on the host, with only a minimal
 * environment. For a single trusted user on a machine without user namespaces; never for teams.
 */
export class Unsandboxed implements Sandbox {
  readonly kind = 'none' as const;

  constructor(private readonly workspaceRoot: string) {}

  workspacePath(runId: string): string {
    return workspaceDir(this.workspaceRoot, runId);
  }

  homePath(runId: string): string {
    return this.workspacePath(runId);
  }

  gatewayUrl(gateway: { tcpUrl(): Promise<string> }): Promise<string> {
    return gateway.tcpUrl();
  }

  runPaths(runId: string): string[] {
    return [this.workspacePath(runId), runStateDir(this.workspaceRoot, runId)];
  }

  async prepareRun(runId: string): Promise<void> {
    await mkdir(this.workspacePath(runId), { recursive: true });
  }

  async destroyRun(runId: string): Promise<void> {
    await rm(runStateDir(this.workspaceRoot, runId), { recursive: true, force: true });
    await rm(this.workspacePath(runId), { recursive: true, force: true });
  }

  async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    const workspace = this.workspacePath(spec.runId);
    const home = spec.homeless ? '/nonexistent' : workspace;
    const [file, ...args] = spec.argv;
    return {
      file,
      args,
      env: { ...baseEnvironment(home, process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'), ...spec.env },
      cwd: path.join(workspace, spec.cwd ?? ''),
      release: async () => undefined,
    };
  }
}
