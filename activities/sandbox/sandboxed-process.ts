import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { NetworkPolicy } from '../../core/network-policy';
import { runProcess, type ProcessResult } from './run-process';
import { ServerNotStartedError } from './served-process';
import { startPrepared } from './start-prepared';
import type { NetworkRefusal } from './egress-proxy';
import type { RunDiskQuota } from './run-disk';
import type { RunDiskUsage } from './run-disks';
import type { PreparedProcess, Sandbox, SandboxNetwork } from './sandbox';

export interface SandboxedCommandResult extends ProcessResult {
  /** Connections the egress proxy refused while the command ran. */
  refusals: NetworkRefusal[];
  /** The kernel killed a process of the run for want of memory while the command ran (the run's limit). */
  oomKilled: boolean;
  /** The command was killed because the run's files reached its disk limit (what they took then). */
  diskLimitExceeded?: RunDiskUsage;
}

/** How often a running command's run is measured against its disk limit. */
const DISK_POLL_MS = 3000;

export interface ExecOptions {
  /** Directory relative to the workspace root. */
  cwd?: string;
  env?: Record<string, string>;
  /** `host` only for the platform's own clones; default: no network at all. */
  network?: 'host';
  homeless?: boolean;
  readonlyBinds?: string[];
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Written to the process's standard input. */
  input?: string | Buffer | Readable;
  maxBuffer?: number;
  /** Where the standard output goes instead of being collected (exec then returns ''); ended with it. */
  output?: Writable;
}

export class ExecError extends Error {
  override name = 'ExecError';
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** Processes of one run, each in its own sandbox. */
export interface RunProcesses {
  /** The workspace as the run's processes see it. */
  workspacePath: string;
  /** `bash -c command` under the run's network policy, with the output handling of runProcess. */
  runCommand(options: {
    command: string;
    cwd?: string;
    policy: NetworkPolicy;
    timeoutMs: number;
    keepBytes: number;
    signal?: AbortSignal;
    onRefusal?: (refusal: NetworkRefusal) => void;
    /** Measured while the command runs: past it, the command is killed. */
    disk?: RunDiskQuota;
  }): Promise<SandboxedCommandResult>;
  /**
   * A program (a harness's CLI) under the run's network policy, like runCommand; with
   * `gatewaySocket` it reaches the model gateway too, and `onStdout` hears its output as it comes.
   */
  runProgram(options: {
    argv: [string, ...string[]];
    cwd?: string;
    env?: Record<string, string>;
    readonlyBinds?: string[];
    gatewaySocket?: string;
    policy: NetworkPolicy;
    timeoutMs: number;
    keepBytes: number;
    signal?: AbortSignal;
    onStdout?: (chunk: Buffer) => void;
    /** RunProcessOptions.stdoutFile: the output is on disk as the program writes it, and read from there. */
    stdoutFile?: string;
    onRefusal?: (refusal: NetworkRefusal) => void;
    disk?: RunDiskQuota;
    /** On the environment's image (SandboxProcessSpec.onImage). */
    onImage?: boolean;
    /** SandboxProcessSpec.commandSandbox. */
    commandSandbox?: boolean;
  }): Promise<SandboxedCommandResult>;
  /** Runs a program to completion and returns its standard output; rejects with ExecError. */
  exec(argv: [string, ...string[]], options?: ExecOptions): Promise<string>;
}

export function runProcesses(sandbox: Sandbox, runId: string): RunProcesses {
  const runProgram: RunProcesses['runProgram'] = async ({
    argv,
    cwd,
    env,
    readonlyBinds,
    gatewaySocket,
    policy,
    timeoutMs,
    keepBytes,
    signal,
    onStdout,
    stdoutFile,
    onRefusal,
    disk,
    onImage,
    commandSandbox,
  }) => {
    const refusals: NetworkRefusal[] = [];
    const network: SandboxNetwork = {
      kind: 'proxy',
      policy,
      onRefusal: (r) => {
        refusals.push(r);
        onRefusal?.(r);
      },
    };
    const prepared = await sandbox.prepare({
      runId,
      argv,
      cwd,
      env,
      network,
      readonlyBinds,
      gatewaySocket,
      onImage,
      commandSandbox,
    });
    const oomBefore = (await sandbox.oomKills?.(runId)) ?? 0;
    const overDisk = new AbortController();
    let diskUsed: RunDiskUsage | undefined;
    let measuring = false;
    const diskTimer =
      disk && disk.maxBytes > 0
        ? setInterval(() => {
            if (measuring) return;
            measuring = true;
            void disk
              .usage()
              .then((used) => {
                if (used?.reached && !overDisk.signal.aborted) {
                  diskUsed = used;
                  overDisk.abort();
                }
              })
              .catch(() => undefined)
              .finally(() => (measuring = false));
          }, DISK_POLL_MS)
        : undefined;
    try {
      let result: Awaited<ReturnType<typeof runProcess>>;
      try {
        result = await runProcess({
          prepared,
          timeoutMs,
          signal: signal ? AbortSignal.any([signal, overDisk.signal]) : overDisk.signal,
          keepBytes,
          onStdout,
          ...(stdoutFile ? { stdoutFile } : {}),
        });
      } catch (err) {
        // The sandbox it enters could not start it (that sandbox did not start, say): said as its
        // output with status 1, as bubblewrap said it when each command had a sandbox of its own.
        if (!prepared.entersSandbox || !(err instanceof ServerNotStartedError) || signal?.aborted) throw err;
        return { ...notRun(`sandbox: ${(err as Error).message}\n`, 1), refusals };
      }
      const oomKilled = ((await sandbox.oomKills?.(runId)) ?? 0) > oomBefore;
      return {
        ...result,
        // A command killed for the run's disk limit was not cancelled by anyone.
        cancelled: result.cancelled && !(diskUsed !== undefined && !signal?.aborted),
        refusals,
        oomKilled,
        ...(diskUsed !== undefined ? { diskLimitExceeded: diskUsed } : {}),
      };
    } finally {
      clearInterval(diskTimer);
      await prepared.release();
    }
  };
  return {
    workspacePath: sandbox.workspacePath(runId),
    runCommand: async ({ command, ...options }) => {
      let shell: string;
      try {
        shell = (await sandbox.shell?.(runId)) ?? '/bin/bash';
      } catch (err) {
        // What the command's caller (the agent, the setup log) is told, as a shell would say it.
        const output = `sandbox: ${(err as Error).message}\n`;
        return noShell(output);
      }
      return runProgram({ argv: [shell, '-c', command], onImage: true, commandSandbox: true, ...options });
    },
    runProgram,

    async exec(argv, options = {}) {
      const network: SandboxNetwork =
        options.network === 'host' ? { kind: 'host' } : { kind: 'proxy', policy: 'none', onRefusal: () => undefined };
      const prepared = await sandbox.prepare({
        runId,
        argv,
        cwd: options.cwd,
        env: options.env,
        network,
        homeless: options.homeless,
        readonlyBinds: options.readonlyBinds,
      });
      try {
        return await collect(prepared, options);
      } finally {
        await prepared.release();
      }
    },
  };
}

function noShell(output: string): SandboxedCommandResult {
  return notRun(output, 127);
}

/** A command that never ran: `output` says why. */
function notRun(output: string, exitCode: number): SandboxedCommandResult {
  return {
    exitCode,
    signal: null,
    timedOut: false,
    cancelled: false,
    durationMs: 0,
    output,
    outputBytes: Buffer.byteLength(output),
    refusals: [],
    oomKilled: false,
  };
}

function collect(prepared: PreparedProcess, options: ExecOptions): Promise<string> {
  const maxBuffer = options.maxBuffer ?? 64 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const child = startPrepared(prepared, { stdin: true });
    const stdin = child.stdin!;
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let overflow = false;
    // A stream that fails kills the process: nothing waits on a pipe nobody reads or feeds.
    const kill = () => child.signal('SIGKILL');
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      kill();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = options.timeoutMs ? setTimeout(kill, options.timeoutMs) : undefined;
    const settled = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    };
    let outputWritten: Promise<void> = Promise.resolve();
    if (options.output) {
      outputWritten = pipeline(child.stdout, options.output).catch((e: unknown) => {
        kill();
        throw e;
      });
      // Read when the process closes; until then, a failure is the process's kill.
      outputWritten.catch(() => undefined);
    } else
      child.stdout.on('data', (chunk: Buffer) => {
        outBytes += chunk.length;
        if (outBytes > maxBuffer) {
          overflow = true;
          kill();
        } else out.push(chunk);
      });
    child.stderr.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString('utf8')).slice(-8192);
    });
    stdin.on('error', () => undefined);
    if (options.input && typeof options.input === 'object' && 'pipe' in options.input) {
      pipeline(options.input, stdin).catch(kill);
    } else stdin.end(options.input ?? '');
    child.once('error', (e: Error) => {
      settled();
      reject(new ExecError(`${prepared.args.at(-1) ?? prepared.file}: ${e.message}`, null, err));
    });
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
      settled();
      if (aborted)
        reject(new ExecError(`${prepared.args.at(-1) ?? prepared.file}: The operation was aborted`, code, err));
      else if (overflow) reject(new ExecError(`output larger than ${maxBuffer} bytes`, code, err));
      // With `output`, once all of it is written there (the process may close before that).
      else if (code === 0)
        outputWritten.then(
          () => resolve(Buffer.concat(out).toString('utf8')),
          (e: unknown) => reject(new ExecError(`writing its output failed: ${(e as Error).message}`, code, err)),
        );
      else reject(new ExecError(err.trim() || `exited with ${code ?? signal}`, code, err));
    });
  });
}
