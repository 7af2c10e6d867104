import { randomBytes } from 'node:crypto';
import { socketPath } from './socket-path';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { SandboxConfig } from '../../core/config';
import { runStateDir, workspaceDir } from '../workspace/workspace-paths';
import type { EgressProxy } from './egress-proxy';
import { BRIDGE_PORT, bridgeMappings, GATEWAY_BRIDGE_PORT, type BridgedSocket } from './network-bridge';
import {
  baseEnvironment,
  SANDBOX_PATH,
  type PreparedProcess,
  type RunImageRoot,
  type Sandbox,
  type SandboxProcessSpec,
} from './sandbox';
import { etcArgs, ETC_FILES, HOST_NETWORK_ETC, HOST_PATH, systemDirArgs } from './host-root';
import { killRunSandboxes } from './sandbox-reaper';
import { limitsSpec, sandboxEnvironmentFile } from './sandbox-init-args';
import { installSandboxInit } from './sandbox-init-binary';
import { makeRunDirs } from './run-state-dirs';
import { CLONE_GITCONFIG, INNER_ID, writeSandboxEtc } from './sandbox-etc';
import { imageShell, RunImageRoots } from './run-image-roots';
import { RunEnvFiles } from './run-env-files';
import type { ProcessLauncher } from './launched-process';
import { RunDisks, type RunDiskUsage } from './run-disks';
import { SpawnServer } from './spawn-server';
import {
  SANDBOX_ENV,
  SANDBOX_GATEWAY_SOCKET,
  SANDBOX_HOME,
  SANDBOX_INIT,
  SANDBOX_PROXY_SOCKET,
  SANDBOX_WORKSPACE,
} from './sandbox-paths';

export { SANDBOX_WORKSPACE } from './sandbox-paths';

export interface BwrapSandboxOptions {
  config: SandboxConfig;
  workspaceRoot: string;
  bwrapPath: string;
  proxy: EgressProxy;
  /** Host uid the run's processes get when the worker runs as root; undefined keeps the worker's uid. */
  hostUid?: number;
  /** The node binary, shown read-only where it is not under /usr (the file tools' helper, the harness CLIs). */
  nodePath: string;
  /** The static sandbox-init binary (sandbox-init-binary.ts). */
  initPath: string;
  /** util-linux's setpriv, by absolute path (used when the worker runs as root). */
  setprivPath: string;
  /** The image cache, whose hold on a run's image ends with the run's workspace. */
  images?: { release(runId: string): Promise<void> };
  /** Bytes of each run's filesystem of its own (AGENT_DISK_LIMITS=enforce); undefined: none, the files are measured. */
  diskMaxBytes?: number;
}

/** Sandboxes built from Linux namespaces with bubblewrap: one per process a run starts. */
export class BwrapSandbox implements Sandbox {
  readonly kind = 'bwrap' as const;
  private readonly stateRoot: string;
  private etcReady: Promise<void> | undefined;
  /** Runs being destroyed: no sandbox of theirs may start meanwhile. */
  private readonly destroying = new Set<string>();
  /** Runs whose private state this worker has made: a command of theirs skips that work. */
  private readonly ready = new Set<string>();
  private readonly images = new RunImageRoots();
  private readonly envFiles: RunEnvFiles;
  /** The host's system directories as bwrap arguments (symlinks, as on merged-/usr systems, stay symlinks). */
  private readonly systemArgs: string[];
  /** Starts the sandboxes, so that the worker never forks itself for one. */
  private readonly spawnServer: SpawnServer;
  /** Each run's files on a filesystem of their own, when the worker enforces disk limits. */
  readonly disks: RunDisks | undefined;

  constructor(private readonly options: BwrapSandboxOptions) {
    this.stateRoot = path.join(options.workspaceRoot, '.sandbox');
    this.systemArgs = systemDirArgs();
    this.spawnServer = SpawnServer.onHost(options.initPath);
    this.envFiles = new RunEnvFiles(options.hostUid);
    this.disks = options.diskMaxBytes
      ? new RunDisks({
          root: options.workspaceRoot,
          maxBytes: options.diskMaxBytes,
          launch: this.spawnServer.launch,
          initPath: options.initPath,
        })
      : undefined;
  }

  get processUid(): number | undefined {
    return this.options.hostUid;
  }

  get hostLauncher(): ProcessLauncher {
    return this.spawnServer.launch;
  }

  workspacePath(): string {
    return SANDBOX_WORKSPACE;
  }

  gatewayUrl(): string {
    return `http://127.0.0.1:${GATEWAY_BRIDGE_PORT}`;
  }

  homePath(): string {
    return SANDBOX_HOME;
  }

  get diskLimits(): string | undefined {
    return this.disks?.description;
  }

  runPaths(runId: string): string[] {
    return [workspaceDir(this.options.workspaceRoot, runId), this.runDir(runId)];
  }

  runDiskUsage(runId: string): Promise<RunDiskUsage | undefined> {
    return this.disks?.usage(runId) ?? Promise.resolve(undefined);
  }

  private runDir(runId: string): string {
    return runStateDir(this.options.workspaceRoot, runId);
  }

  async prepareRun(runId: string): Promise<void> {
    this.destroying.delete(runId);
    await this.makeRunState(runId);
  }

  private async makeRunState(runId: string): Promise<void> {
    await this.ensureEtc();
    await this.disks?.attach(runId);
    await makeRunDirs(workspaceDir(this.options.workspaceRoot, runId), this.runDir(runId), this.options.hostUid);
    this.ready.add(runId);
  }

  async useImage(runId: string, image: RunImageRoot | undefined): Promise<void> {
    if (!this.ready.has(runId)) await this.makeRunState(runId);
    await this.images.record(runId, this.runDir(runId), image);
  }

  async shell(runId: string): Promise<string> {
    const image = await this.images.of(runId, this.runDir(runId));
    return image ? imageShell(image) : '/bin/bash';
  }

  async destroyRun(runId: string): Promise<void> {
    this.destroying.add(runId);
    this.ready.delete(runId);
    this.images.forget(runId);
    this.envFiles.forget(runId);
    // First: a lease left behind would keep its image in the cache for good.
    await this.options.images?.release(runId).catch(() => undefined);
    const workspace = workspaceDir(this.options.workspaceRoot, runId);
    // Root deletes only once nothing of the run is left that could swap a directory for a symlink.
    await killRunSandboxes(workspace);
    await this.disks?.detach(runId);
    // The run's own directory (its environment files among it) first: a worker that dies between
    // the two leaves the workspace, which the sweeper finds and removes with this.
    await rm(this.runDir(runId), { recursive: true, force: true });
    await rm(workspace, { recursive: true, force: true });
  }

  async prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
    if (this.destroying.has(spec.runId)) throw new Error(`the workspace of run ${spec.runId} is being removed`);
    if (!this.ready.has(spec.runId)) await this.makeRunState(spec.runId);
    const { config, workspaceRoot, bwrapPath, nodePath } = this.options;
    const dir = this.runDir(spec.runId);
    const args: string[] = [
      '--unshare-user',
      '--uid',
      INNER_ID,
      '--gid',
      INNER_ID,
      '--unshare-ipc',
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-cgroup-try',
      ...(spec.network.kind === 'proxy' ? ['--unshare-net'] : []),
      '--hostname',
      'sandbox',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--disable-userns',
      // sandbox-init is the sandbox's pid 1 (reap.go, main.go's runAsParent): out of its processes'
      // reach, and what they see as pid 1 names no host path (bubblewrap's own init would show its
      // whole command line: the data directory, the workspace, the sockets).
      '--as-pid-1',
    ];
    const image = spec.onImage ? await this.images.of(spec.runId, dir) : undefined;
    if (image) {
      // The environment's image as `/`, read-only; the sandbox's own identity files over its /etc.
      args.push('--ro-bind', image.rootfs, '/');
      for (const name of ['passwd', 'group', 'hostname', 'hosts'])
        args.push('--ro-bind', path.join(this.etcDir, name), `/etc/${name}`);
    } else {
      args.push(...this.systemArgs);
      args.push(...etcArgs(ETC_FILES));
      for (const name of ['passwd', 'group', 'hostname', CLONE_GITCONFIG])
        args.push('--ro-bind', path.join(this.etcDir, name), `/etc/${name}`);
      if (spec.network.kind === 'host') {
        args.push(...etcArgs(HOST_NETWORK_ETC));
      } else {
        args.push('--ro-bind', path.join(this.etcDir, 'hosts'), '/etc/hosts');
      }
    }
    const nodePrefix = path.dirname(path.dirname(nodePath));
    // Host toolchains are the host root's; an image brings its own.
    const extraReadonly = image
      ? []
      : [...config.readonlyPaths, ...(nodePrefix.startsWith('/usr') ? [] : [nodePrefix])];
    // /dev is a tmpfs (RAM): read-only but for a /dev/shm of bounded size.
    const shmBytes = Math.max(16, Math.floor(config.limits.memoryMb / 4)) * 1024 * 1024;
    args.push('--proc', '/proc', '--dev', '/dev');
    args.push('--perms', '1777', '--size', String(shmBytes), '--tmpfs', '/dev/shm', '--remount-ro', '/dev');
    args.push('--bind', workspaceDir(workspaceRoot, spec.runId), SANDBOX_WORKSPACE);
    args.push('--bind', path.join(dir, 'tmp'), '/tmp');
    const home = spec.homeless ? '/nonexistent' : SANDBOX_HOME;
    if (!spec.homeless) args.push('--bind', path.join(dir, 'home'), SANDBOX_HOME);
    // After /tmp, so that a path under the host's /tmp is not hidden by the private one.
    for (const p of [...extraReadonly, ...(image ? [] : (spec.readonlyBinds ?? []))]) args.push('--ro-bind-try', p, p);

    let release = async () => undefined as void;
    const searchPath = [image?.path ?? SANDBOX_PATH, ...extraReadonly.map((p) => path.join(p, 'bin'))].join(':');
    // The image's variables first: none of them can undo the sandbox's own (home, proxy, PATH's origin).
    const env: Record<string, string> = { ...image?.env, ...baseEnvironment(home, searchPath) };
    const bridged: BridgedSocket[] = [];
    if (spec.network.kind === 'proxy' && spec.network.policy !== 'none') {
      const socket = socketPath(path.join(dir, 'sockets'), `${randomBytes(9).toString('base64url')}.sock`);
      const channel = await this.options.proxy.openChannel(socket, spec.network.policy, spec.network.onRefusal);
      release = () => channel.close();
      args.push('--bind', socket, SANDBOX_PROXY_SOCKET);
      const proxyUrl = `http://127.0.0.1:${BRIDGE_PORT}`;
      for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy'])
        env[name] = proxyUrl;
      bridged.push({ socketPath: SANDBOX_PROXY_SOCKET, port: BRIDGE_PORT });
    }
    if (spec.gatewaySocket) {
      args.push('--bind', spec.gatewaySocket, SANDBOX_GATEWAY_SOCKET);
      bridged.push({ socketPath: SANDBOX_GATEWAY_SOCKET, port: GATEWAY_BRIDGE_PORT });
    }
    if (bridged.length) env.NO_PROXY = env.no_proxy = 'localhost,127.0.0.1,::1';
    // The sandbox's variables never touch the host side: bwrap, setpriv and the cgroup join run
    // with a fixed environment (an LD_PRELOAD or PATH from an image or an MCP server's config
    // would run there as the worker's user), and sandbox-init reads the sandbox's from a file.
    const envFile = await this.envFiles.acquire(
      spec.runId,
      path.join(dir, 'env'),
      sandboxEnvironmentFile({ ...env, ...spec.env }),
    );
    const closeChannel = release;
    release = async () => {
      envFile.release();
      await closeChannel();
    };
    args.push('--ro-bind', envFile.file, SANDBOX_ENV);
    args.push('--ro-bind', this.initCopy, SANDBOX_INIT);
    args.push('--remount-ro', '/');
    args.push('--chdir', path.posix.join(SANDBOX_WORKSPACE, spec.cwd ?? ''));
    args.push('--', SANDBOX_INIT, '-env', SANDBOX_ENV, '-limits', limitsSpec(config.limits));
    if (spec.spawnServer) {
      if (spec.gatewaySocket) throw new Error('a spawn server in a sandbox has no model gateway');
      args.push('-spawn-server', '-contained');
      if (bridged.length) args.push('-bridge', bridgeMappings(bridged));
    } else {
      if (bridged.length) args.push('-bridge', bridgeMappings(bridged));
      args.push('--', ...spec.argv);
    }

    return {
      ...this.asSandboxUid(bwrapPath, args),
      env: { PATH: HOST_PATH },
      cwd: '/',
      launch: this.spawnServer.launch,
      release,
      inRun: { file: bwrapPath, args },
    };
  }

  async prepareRunSpawnServer(runId: string): Promise<PreparedProcess> {
    if (this.destroying.has(runId)) throw new Error(`the workspace of run ${runId} is being removed`);
    if (!this.ready.has(runId)) await this.makeRunState(runId);
    return {
      ...this.asSandboxUid(this.initCopy, ['-spawn-server']),
      env: { PATH: HOST_PATH },
      cwd: '/',
      launch: this.spawnServer.launch,
      release: async () => undefined,
    };
  }

  /** `file args` as the sandbox's host uid, without new privileges (when the worker runs as root). */
  private asSandboxUid(file: string, args: string[]): { file: string; args: string[] } {
    const { hostUid, setprivPath } = this.options;
    if (hostUid === undefined) return { file, args };
    const uid = String(hostUid);
    return {
      file: setprivPath,
      args: ['--reuid', uid, '--regid', uid, '--clear-groups', '--no-new-privs', '--', file, ...args],
    };
  }

  private get etcDir(): string {
    return path.join(this.stateRoot, 'etc');
  }

  /** The worker's copy of sandbox-init, where the sandbox uid can read it (the cache may be private to the worker's user). */
  private get initCopy(): string {
    return path.join(this.stateRoot, 'sandbox-init');
  }

  /** The sandbox's own /etc/passwd, group, hosts and hostname, and sandbox-init, written once per worker. */
  private ensureEtc(): Promise<void> {
    this.etcReady ??= (async () => {
      await mkdir(this.etcDir, { recursive: true });
      await chmod(this.stateRoot, 0o711);
      await chmod(this.etcDir, 0o755);
      await writeSandboxEtc(this.etcDir);
      await installSandboxInit(this.options.initPath, this.initCopy);
    })().catch((err: unknown) => {
      this.etcReady = undefined;
      throw err;
    });
    return this.etcReady;
  }
}
