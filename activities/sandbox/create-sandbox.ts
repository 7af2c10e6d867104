import { accessSync, constants, existsSync } from 'node:fs';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../core/config';
import type { Logger } from '../../core/logger';
import type { OutboundAddressRules } from '../../core/outbound-addresses';
import { BwrapSandbox, SANDBOX_WORKSPACE, type BwrapSandboxOptions } from './bwrap-sandbox';
import { EgressProxy } from './egress-proxy';
import type { Sandbox } from './sandbox';
import { CommandSandbox } from './command-sandbox';
import { HelperSandbox } from './helper-sandbox';
import { LimitedSandbox } from './limited-sandbox';
import { RunServedSandbox } from './run-served-sandbox';
import { limitsSpec } from './sandbox-init-args';
import { installSandboxInit, locateSandboxInit } from './sandbox-init-binary';
import { detectRunCgroups, REAL_HOST, type CgroupHost } from './run-cgroups';
import { killLeftoverSandboxes } from './sandbox-reaper';
import { runDiskPaths, type RunDisks } from './run-disks';
import { ExecError, runProcesses } from './sandboxed-process';
import { ToolSandbox } from './tool-sandbox';
import { Unsandboxed } from './unsandboxed';

export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

const INSTALL_HINT =
  'Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora/RHEL: `dnf install bubblewrap`; Alpine: `apk add bubblewrap`), ' +
  'or set AGENT_SANDBOX=none to run agents unconfined on this machine (only for a single trusted user, never for shared deployments).';

const USERNS_HINT =
  'bubblewrap needs unprivileged user namespaces: on the host, `sysctl kernel.unprivileged_userns_clone=1` (Debian) and ' +
  '`sysctl kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu 23.10+); in Docker, run the worker with ' +
  '`--security-opt seccomp=unconfined --security-opt apparmor=unconfined` (see docker-compose.yml).';

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * The sandbox of the platform's image tools (skopeo, umoci): bubblewrap, as IMAGE_TOOLS_UID when
 * the worker is root, each process under sandbox-init's limits. Undefined with AGENT_SANDBOX=none,
 * or where bubblewrap or setpriv is missing (createSandbox then refuses to start and says why).
 */
export async function createToolSandbox(config: Config): Promise<ToolSandbox | undefined> {
  if (config.sandbox.kind === 'none') return undefined;
  const bwrapPath = config.sandbox.bwrapPath ?? findOnPath('bwrap');
  if (!bwrapPath) return undefined;
  const asRoot = process.getuid?.() === 0;
  const setprivPath = findOnPath('setpriv');
  if (asRoot && !setprivPath) return undefined;
  const initPath = await toolInitCopy(await sandboxInit(config.sandbox.initPath), config.images.cacheDir);
  return new ToolSandbox({
    bwrapPath,
    initPath,
    limits: toolLimits(config),
    ...(asRoot && setprivPath ? { asUser: { setprivPath, uid: config.images.toolsUid } } : {}),
  });
}

/**
 * Each image tool process's limits: room for a large pull (a file as large as the cache, the
 * pull's whole timeout of CPU), but not the host's memory or process table.
 */
function toolLimits(config: Config): string {
  return limitsSpec({
    maxProcesses: TOOL_MAX_PROCESSES,
    memoryMb: TOOL_MEMORY_MB,
    maxFileSizeMb: Math.ceil(config.images.cacheMaxBytes / 1024 / 1024),
    cpuSeconds: config.images.pullTimeoutSeconds,
    maxOpenFiles: TOOL_MAX_OPEN_FILES,
  });
}

const TOOL_MAX_PROCESSES = 1024;
const TOOL_MEMORY_MB = 4096;
const TOOL_MAX_OPEN_FILES = 4096;

/** sandbox-init where the tools' uid can read it: beside the image cache (the worker's own cache may be private). */
async function toolInitCopy(initPath: string, cacheDir: string): Promise<string> {
  await mkdir(cacheDir, { recursive: true });
  await chmod(cacheDir, 0o711);
  const copy = path.join(cacheDir, 'sandbox-init');
  await installSandboxInit(initPath, copy);
  return copy;
}

/**
 * The worker's sandbox, checked before the worker takes any task: with `bwrap`, bubblewrap must
 * be installed and able to build a sandbox here, else the worker refuses to start and says why.
 */
export async function createSandbox(
  config: Config,
  rules: OutboundAddressRules,
  logger: Logger,
  cgroupHost: CgroupHost = REAL_HOST,
  images?: BwrapSandboxOptions['images'],
): Promise<Sandbox> {
  const sandbox = await withRunLimits(await createIsolation(config, rules, logger, images), config, logger, cgroupHost);
  // Each run's sandboxes start from a spawn server of the run's own (run-served-sandbox.ts), its
  // commands share a sandbox per network policy (command-sandbox.ts), and the platform's own
  // helpers share one (helper-sandbox.ts); unconfined, none of them.
  return sandbox.kind === 'bwrap' ? new HelperSandbox(new CommandSandbox(new RunServedSandbox(sandbox))) : sandbox;
}

/**
 * Puts every run's processes in a cgroup of their own (memory, processes, CPU for the run as a
 * whole). A worker that cannot refuses to start, unless AGENT_RUN_LIMITS=off says to go on with
 * per-process limits only: a run could then take the host's memory and processes.
 */
async function withRunLimits(sandbox: Sandbox, config: Config, logger: Logger, host: CgroupHost): Promise<Sandbox> {
  const { limits } = config.sandbox;
  if (config.sandbox.runLimits === 'off') {
    logger.warn(
      "AGENT_RUN_LIMITS=off: a run's processes are limited one by one, not together; one run can take the host's memory, processes and CPU. Never run shared deployments like this.",
    );
    return sandbox;
  }
  const found = await detectRunCgroups(
    { memoryMb: limits.memoryMb, maxProcesses: limits.maxProcesses, cpus: config.sandbox.cpus },
    config.worker.id,
    host,
  );
  if ('unavailable' in found) {
    throw new SandboxUnavailableError(
      `This worker cannot limit its runs' memory, processes and CPU: ${found.unavailable}. Run it as root (or with a delegated cgroup v2 subtree) on a host with the memory, pids and cpu controllers; in Docker, give the worker \`cgroup: private\` and a writable /sys/fs/cgroup (see docker-compose.yml). To run without run limits anyway (one trusted user), set AGENT_RUN_LIMITS=off.`,
    );
  }
  logger.info('run limits enforced', { run_limits: found.cgroups.description });
  return new LimitedSandbox(sandbox, found.cgroups);
}

async function createIsolation(
  config: Config,
  rules: OutboundAddressRules,
  logger: Logger,
  images: BwrapSandboxOptions['images'],
): Promise<Sandbox> {
  const root = config.workspace.dir;
  await mkdir(root, { recursive: true });
  if (config.sandbox.kind === 'none') {
    logger.warn(
      'AGENT_SANDBOX=none: agent commands, setup commands and MCP servers run unconfined as the worker user; never use this for more than one trusted user',
    );
    return new Unsandboxed(root);
  }
  if (process.platform !== 'linux') {
    throw new SandboxUnavailableError(
      `AGENT_SANDBOX=bwrap needs Linux (this is ${process.platform}). Run the worker on Linux, or set AGENT_SANDBOX=none for a single-user machine.`,
    );
  }
  const bwrapPath = config.sandbox.bwrapPath ?? findOnPath('bwrap');
  if (!bwrapPath || !existsSync(bwrapPath)) {
    throw new SandboxUnavailableError(
      `AGENT_SANDBOX=bwrap but ${config.sandbox.bwrapPath ? `AGENT_SANDBOX_BWRAP_PATH=${config.sandbox.bwrapPath} does not exist` : 'bubblewrap (`bwrap`) is not on PATH'}. ${INSTALL_HINT}`,
    );
  }
  const asRoot = process.getuid?.() === 0;
  // The sandbox uid must reach its own workspace by name, and list nothing else here.
  await chmod(root, 0o711);
  const setprivPath = findOnPath('setpriv');
  if (asRoot && !setprivPath) {
    throw new SandboxUnavailableError(
      'The worker runs as root and needs `setpriv` (util-linux) to start sandboxes as a non-root user: install util-linux.',
    );
  }
  const sandbox = new BwrapSandbox({
    config: config.sandbox,
    workspaceRoot: root,
    bwrapPath,
    proxy: new EgressProxy(rules),
    hostUid: asRoot ? config.sandbox.uid : undefined,
    nodePath: process.execPath,
    initPath: await sandboxInit(config.sandbox.initPath),
    setprivPath: setprivPath ?? 'setpriv',
    images,
    diskMaxBytes: diskLimitsEnforced(config, logger) ? config.sandbox.workspaceMaxBytes : undefined,
  });
  const killed = await killLeftoverSandboxes(root);
  if (killed.length) logger.warn('killed sandboxed processes a previous worker left running', { pids: killed });
  if (sandbox.disks) await prepareRunDisks(sandbox.disks, logger);
  await probe(sandbox, root);
  return sandbox;
}

/** Whether each run gets a filesystem of its own for its disk limit; says so when it does not. */
function diskLimitsEnforced(config: Config, logger: Logger): boolean {
  if (config.sandbox.workspaceMaxBytes <= 0) return false;
  if (config.sandbox.diskLimits === 'enforce') return true;
  logger.warn(
    "AGENT_DISK_LIMITS=measure: a run's files are measured while its commands run and after each step, so a fast writer can take far more than AGENT_WORKSPACE_MAX_BYTES of the host's disk before it is stopped. Never run shared deployments like this.",
  );
  return false;
}

/**
 * Checks that this worker can give a run a filesystem of its own (makes, mounts, measures and
 * removes one), then mounts again those of the runs whose workspaces are still here.
 */
async function prepareRunDisks(disks: RunDisks, logger: Logger): Promise<void> {
  const probeRun = '.probe-disk';
  try {
    if (process.getuid?.() !== 0) throw new Error('the worker does not run as root');
    await disks.detach(probeRun);
    await disks.attach(probeRun);
    if (!(await disks.usage(probeRun))) throw new Error('the probe filesystem did not mount');
    if (disks.watchers && !disks.watchers.watching(probeRun))
      logger.warn(
        "the worker cannot follow the changes of a run's filesystem (fanotify, Linux 5.9 or newer): each checkpoint walks all of the run's files",
        { error: disks.watchers.lastError },
      );
    await disks.detach(probeRun);
    for (const dir of Object.values(runDiskPaths(disks.options.root, probeRun)))
      await rm(dir, { recursive: true, force: true });
  } catch (err) {
    throw new SandboxUnavailableError(
      `AGENT_DISK_LIMITS=enforce, but this worker cannot give a run a filesystem of its own for AGENT_WORKSPACE_MAX_BYTES: ${(err as Error).message}. ` +
        'It needs root, loop devices and `mkfs.ext4` (e2fsprogs): in a container, run the worker privileged, or with CAP_SYS_ADMIN and the devices /dev/loop-control and /dev/loop* (see docker-compose.yml). ' +
        "To measure runs' files instead (a fast writer can then pass the limit before it is stopped), set AGENT_DISK_LIMITS=measure.",
    );
  }
  const { attached, removed } = await disks.reattach();
  if (attached.length)
    logger.info('mounted again the filesystems of runs whose workspaces are still here', { runs: attached });
  if (removed.length) logger.info('removed the filesystems of runs whose workspaces are gone', { runs: removed });
}

async function sandboxInit(configured: string | undefined): Promise<string> {
  try {
    return await locateSandboxInit(configured);
  } catch (err) {
    throw new SandboxUnavailableError((err as Error).message);
  }
}

/** Builds one sandbox and checks from inside that it is one. */
async function probe(sandbox: BwrapSandbox, root: string): Promise<void> {
  const runId = '.probe';
  await sandbox.prepareRun(runId);
  try {
    const stdout = await runProcesses(sandbox, runId).exec(['/bin/bash', '-c', 'echo "$(id -u):$(hostname):$PWD"'], {
      timeoutMs: 30_000,
    });
    if (stdout.trim() !== `1000:sandbox:${SANDBOX_WORKSPACE}`) {
      throw new SandboxUnavailableError(`the probe printed ${JSON.stringify(stdout.trim())}`);
    }
  } catch (err) {
    const detail = err instanceof ExecError ? err.stderr.trim() || err.message : (err as Error).message;
    throw new SandboxUnavailableError(
      `AGENT_SANDBOX=bwrap, but bubblewrap could not build a sandbox on this machine: ${detail}. ${USERNS_HINT} ` +
        `The worker's workspace directory (${root}) and its parent directories must also be searchable (o+x) by the sandbox uid.`,
    );
  } finally {
    await sandbox.destroyRun(runId);
  }
}
