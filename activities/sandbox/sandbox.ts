import type { ProcessLauncher } from './launched-process';
import type { NetworkPolicy } from '../../core/network-policy';
import type { NetworkRefusal } from './egress-proxy';
import type { RunDiskUsage } from './run-disks';

/**
 * What a run's processes may reach on the network: the egress proxy under a policy, or (only for
 * the platform's own git clones, which carry its credential) the host network.
 */
export type SandboxNetwork =
  { kind: 'proxy'; policy: NetworkPolicy; onRefusal: (refusal: NetworkRefusal) => void } | { kind: 'host' };

export interface SandboxProcessSpec {
  runId: string;
  argv: [string, ...string[]];
  /** Working directory relative to the workspace root ('' for the root). */
  cwd?: string;
  /** Variables on top of the sandbox's minimal environment. */
  env?: Record<string, string>;
  network: SandboxNetwork;
  /** For git clones: no private home, no global git configuration the run could have written. */
  homeless?: boolean;
  /** Host paths to show read-only at the same path (a `file://` GIT_BASE_URL for clones, a harness's CLI). */
  readonlyBinds?: string[];
  /** The host socket of the worker's model gateway for this process, reached at `Sandbox.gatewayUrl`. */
  gatewaySocket?: string;
  /**
   * Runs on the environment's image, when the run has one (the agent's commands, setup commands,
   * MCP servers); otherwise on the worker's root, as the platform's own helpers (git, the file
   * tools) always do.
   */
  onImage?: boolean;
  /**
   * Instead of `argv`, sandbox-init itself serves in the sandbox (`-spawn-server -contained`):
   * the processes it starts get the sandbox's environment, limits and network (a run's helper or
   * command sandbox). No model gateway.
   */
  spawnServer?: boolean;
  /**
   * An agent's or setup command: it may run in the run's command sandbox for its network policy,
   * which stays up between commands (command-sandbox.ts), rather than in a sandbox of its own.
   */
  commandSandbox?: boolean;
}

/** An environment image's root filesystem as a run's sandbox uses it (activities/images). */
export interface RunImageRoot {
  digest: string;
  rootfs: string;
  /** The image's `Env`, as variables (under the sandbox's own). */
  env: Record<string, string>;
  /** The image's PATH, when it sets one. */
  path?: string;
}

/** A process ready to spawn; `release` frees what it needed outside (its proxy socket). */
export interface PreparedProcess {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Host directory to spawn in (the sandbox changes into the command's own directory itself). */
  cwd: string;
  /** What starts it (default: a fork of the worker). */
  launch?: ProcessLauncher;
  /**
   * It starts inside a sandbox that is already running (a run's helper sandbox): `file` and `cwd`
   * are paths in there, and only `launch` can start it.
   */
  entersSandbox?: boolean;
  /**
   * The same process without the host-side steps that put it in the run's cgroup and under the
   * sandbox's host uid, and (once a layer gives it one) the run's own spawn server, which took
   * those steps once and starts it so (run-served-sandbox.ts). `file` and `args` stay the whole
   * chain, for what spawns a process itself (the MCP SDK).
   */
  inRun?: { file: string; args: string[]; launch?: ProcessLauncher };
  release(): Promise<void>;
}

/**
 * Everything a run starts goes through a Sandbox: agent commands, setup commands, stdio MCP
 * servers, git in the workspace and the file tools' helper. Implementations: bubblewrap
 * (namespaces), and `none` for machines where an operator chose to run unconfined.
 */
export interface Sandbox {
  readonly kind: 'bwrap' | 'none';
  /** How the run's processes are limited together (cgroups); undefined: one by one only (AGENT_RUN_LIMITS=off). */
  readonly runLimits?: string;
  /** How the run's files are limited: a filesystem of their own (AGENT_DISK_LIMITS=enforce); undefined: measured. */
  readonly diskLimits?: string;
  /** Starts the worker's own programs on the host as the worker's user (du), without forking the worker; undefined: a fork. */
  readonly hostLauncher?: ProcessLauncher;
  /** The host uid the run's processes (and its spawn server) run as, when not the worker's: a worker running as root. */
  readonly processUid?: number;
  /** The workspace's path as the run's processes see it. */
  workspacePath(runId: string): string;
  /** The run's private home directory as its processes see it. */
  homePath(runId: string): string;
  /**
   * Where a process given a `gatewaySocket` reaches the model gateway (an HTTP base URL). Without
   * a sandbox the gateway listens on the host's loopback itself (`tcpUrl`).
   */
  gatewayUrl(gateway: { tcpUrl(): Promise<string> }): Promise<string> | string;
  /** Makes the run's workspace and private state (home, tmp, ownership); idempotent. */
  prepareRun(runId: string): Promise<void>;
  prepare(spec: SandboxProcessSpec): Promise<PreparedProcess>;
  /**
   * The run's own spawn server (`sandbox-init -spawn-server`): a process on the host side, in the
   * run's cgroup, as the sandbox's host uid without new privileges, which starts the run's
   * sandboxes (`PreparedProcess.inRun`) with none of those steps again. Only bubblewrap has one.
   */
  prepareRunSpawnServer?(runId: string): Promise<PreparedProcess>;
  /**
   * Removes the run's workspace and private state. Every process of the run is killed first and
   * no new one starts meanwhile, so nothing the run controls can race the deletion.
   */
  destroyRun(runId: string): Promise<void>;
  /** The host directories the run's processes write (its workspace, and its private home and tmp). */
  runPaths(runId: string): string[];
  /** What the run's files take on the filesystem of its own; undefined where it has none (they are measured instead). */
  runDiskUsage?(runId: string): Promise<RunDiskUsage | undefined>;
  /** Makes the run's commands use an image's root filesystem (undefined: the host's); kept with the run's state. Only bubblewrap can. */
  useImage?(runId: string, image: RunImageRoot | undefined): Promise<void>;
  /** The shell that runs the run's commands: bash on the host's root; bash, else sh, on an image. */
  shell?(runId: string): Promise<string>;
  /** How many of the run's processes the kernel killed for want of memory (where run limits are enforced). */
  oomKills?(runId: string): Promise<number>;
  /** The host pids of the run's processes now (its cgroup's); undefined where they are not kept together. */
  runPids?(runId: string): Promise<number[] | undefined>;
}

/** Where programs are looked for inside a sandbox (plus the bin directories of read-only extras). */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The environment every sandboxed process starts from: enough to work, none of the worker's secrets. */
export function baseEnvironment(home: string, path: string): Record<string, string> {
  return {
    PATH: path,
    HOME: home,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'agent',
    GIT_AUTHOR_EMAIL: 'agent@agent-runs.invalid',
    GIT_COMMITTER_NAME: 'agent',
    GIT_COMMITTER_EMAIL: 'agent@agent-runs.invalid',
    CI: 'true',
  };
}

/** Describes why a sandboxed command ended, when a resource limit is the likely cause. */
export function limitHint(exitCode: number | null, output: string): string | undefined {
  if (exitCode === 153) return 'The command hit the sandbox file size limit (AGENT_SANDBOX_MAX_FILE_SIZE_MB).';
  if (exitCode === 152) return 'The command hit the sandbox CPU time limit (AGENT_SANDBOX_CPU_SECONDS).';
  if (/fork: (retry: )?Resource temporarily unavailable|Cannot fork|EAGAIN.*spawn/i.test(output))
    return "The command hit the run's process limit (AGENT_SANDBOX_MAX_PROCESSES), which counts all of the run's processes together.";
  if (/No space left on device|ENOSPC|Disk quota exceeded|EDQUOT/.test(output))
    return "The command ran out of disk: the run's files (workspace, home and tmp) together reached their limit (AGENT_WORKSPACE_MAX_BYTES).";
  if (/Cannot allocate memory|MemoryError|out of memory|std::bad_alloc/i.test(output))
    return 'The command may have hit the sandbox memory limit (AGENT_SANDBOX_MEMORY_MB).';
  return undefined;
}
