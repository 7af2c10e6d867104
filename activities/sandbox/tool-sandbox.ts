import { execFile, type ChildProcess, type ExecFileException } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { etcArgs, ETC_FILES, HOST_NETWORK_ETC, HOST_PATH, systemDirArgs } from './host-root';
import { SANDBOX_INIT } from './sandbox-paths';

/** The tool is not installed on this machine (on the launchers' PATH). */
export class ToolMissingError extends Error {
  override name = 'ToolMissingError';
}

/** A tool's process, ready to spawn (with this environment: the launchers' only one). */
export interface ToolProcess {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

/** How long a tool may run, and how much it may print. */
export interface ToolRunOptions {
  timeoutMs: number;
  maxBuffer: number;
  signal?: AbortSignal;
  killSignal?: NodeJS.Signals;
}

/** Starts a tool that `wrap` put in its sandbox: the one place a tool's process is started. */
export function execTool(
  tool: ToolProcess,
  options: ToolRunOptions,
  callback: (err: ExecFileException | null, stdout: Buffer, stderr: Buffer) => void,
): ChildProcess {
  return execFile(
    tool.file,
    tool.args,
    {
      encoding: 'buffer',
      env: tool.env,
      timeout: options.timeoutMs,
      maxBuffer: options.maxBuffer,
      signal: options.signal,
      ...(options.killSignal ? { killSignal: options.killSignal } : {}),
    },
    callback,
  );
}

/** execTool awaited: the tool's output, or its failure with what it said on stderr as `stderr`. */
export function runTool(tool: ToolProcess, options: ToolRunOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    execTool(tool, options, (err, stdout, stderr) =>
      err ? reject(Object.assign(err, { stderr: stderr.toString('utf8') })) : resolve(stdout),
    ),
  );
}

export interface ToolSpec {
  /** `host` for a tool that talks to a registry (it may be private or on loopback, as git hosts may). */
  network: 'host' | 'none';
  /** Host directories the tool may write, shown at the same paths. */
  writable: string[];
  /** Host files and directories it may read, at the same paths. */
  readable?: string[];
  /** The tool's whole environment. */
  env: Record<string, string>;
}

export interface ToolSandboxOptions {
  bwrapPath: string;
  /** sandbox-init, where the tools' uid can read it. */
  initPath: string;
  /** sandbox-init's `-limits` for each tool process (limitsSpec). */
  limits: string;
  /** util-linux's setpriv, by absolute path, and the uid tools run as, when the worker runs as root. */
  asUser?: { setprivPath: string; uid: number };
}

const TMP_BYTES = 64 * 1024 * 1024;

/** Configuration of the tools themselves that they read from /etc (registries, trust policy, TLS for registries). */
const TOOL_ETC = ['containers', 'docker/certs.d'];

/**
 * A bubblewrap sandbox for the platform's own tools that handle bytes from outside on the
 * machine's behalf rather than a run's: skopeo and umoci, pulling and unpacking environments'
 * images into the machine's image cache. A tool sees the host's system directories, the
 * directories it was given and nothing else of the host (no workspaces, no other cache entries,
 * no worker state); it runs as IMAGE_TOOLS_UID when the worker is root, never as root, under
 * sandbox-init's limits (memory, processes, file size, CPU); and it dies with the worker (`--die-with-parent`): a worker killed mid-pull leaves no download behind.
 */
export class ToolSandbox {
  private readonly systemArgs = systemDirArgs();

  constructor(private readonly options: ToolSandboxOptions) {}

  /** The host uid tools run as, when it is not the worker's own. */
  get uid(): number | undefined {
    return this.options.asUser?.uid;
  }

  /** The tool, by its absolute path on the host, in a sandbox of its own; ToolMissingError when it is not installed. */
  wrap(argv: [string, ...string[]], spec: ToolSpec): ToolProcess {
    const [name, ...rest] = argv;
    const program = locate(name);
    const args = [
      '--unshare-user',
      '--unshare-ipc',
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-cgroup-try',
      ...(spec.network === 'none' ? ['--unshare-net'] : []),
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--disable-userns',
      ...this.systemArgs,
      ...etcArgs(ETC_FILES),
      ...etcArgs(TOOL_ETC),
      // Also without a network: umoci's rootless bundle refers to the host's resolv.conf.
      ...etcArgs(HOST_NETWORK_ETC),
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      // In RAM: bounded (the tools write their work into the directories they are given).
      '--size',
      String(TMP_BYTES),
      '--tmpfs',
      '/tmp',
      ...(spec.readable ?? []).flatMap((p) => ['--ro-bind', p, p]),
      ...spec.writable.flatMap((p) => ['--bind', p, p]),
      '--clearenv',
      ...Object.entries(spec.env).flatMap(([name, value]) => ['--setenv', name, value]),
      '--ro-bind',
      this.options.initPath,
      SANDBOX_INIT,
      '--chdir',
      '/',
      '--',
      SANDBOX_INIT,
      '-limits',
      this.options.limits,
      '--',
      program,
      ...rest,
    ];
    const { asUser, bwrapPath } = this.options;
    if (!asUser) return { file: bwrapPath, args, env: { PATH: HOST_PATH } };
    const uid = String(asUser.uid);
    return {
      file: asUser.setprivPath,
      args: ['--reuid', uid, '--regid', uid, '--clear-groups', '--no-new-privs', '--', bwrapPath, ...args],
      env: { PATH: HOST_PATH },
    };
  }
}

function locate(name: string): string {
  for (const dir of HOST_PATH.split(':')) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  throw new ToolMissingError(`${name} is not installed (looked in ${HOST_PATH})`);
}
