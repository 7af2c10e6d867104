import type { UserFailureDetails } from '../../workflows/run-contract';
import type { SandboxedCommandResult } from '../sandbox/sandboxed-process';
import type { InvocationReport } from './harness-transcript';
import type { GatewayChannel } from './model-gateway';

export interface InvocationFailure {
  message: string;
  code: UserFailureDetails['errorCode'];
  /** Worth another attempt (the provider failing on its side): the retried invocation resumes the session. */
  retry?: boolean;
  /** The run's files reached its disk limit: they are given up with the turn. */
  diskLimit?: boolean;
}

/**
 * How an invocation of a CLI ended, when not well: the gateway's refusal (the run's budget), the
 * provider's answer (a bad key is the secret's owner's to fix, a failing provider worth a retry),
 * the sandbox's limits, or the CLI's own error. Undefined: it finished its turn.
 */
export function invocationFailure({
  title,
  result,
  report,
  gateway,
  secretName,
  memoryMb,
}: {
  title: string;
  result: SandboxedCommandResult;
  report: InvocationReport;
  gateway: Pick<GatewayChannel, 'refusal' | 'providerError'>;
  secretName?: string;
  /** The run's memory limit, AGENT_SANDBOX_MEMORY_MB. */
  memoryMb: number;
}): InvocationFailure | undefined {
  const ended = result.exitCode === 0 && !result.timedOut && report.result?.isError !== true;
  if (ended) return undefined;
  if (gateway.refusal?.reason === 'budget_exceeded') {
    return {
      message: `${title} stopped: the model gateway refused its calls because ${gateway.refusal.message}`,
      code: 'budget_exceeded',
    };
  }
  const provider = gateway.providerError;
  if (provider && (provider.status === 401 || provider.status === 403)) {
    return secretName
      ? {
          message: `The model provider refused the key in your team's secret ${JSON.stringify(secretName)} (HTTP ${provider.status}: ${provider.message}); store a valid one (POST /api/v1/agent/secrets) and send a follow-up.`,
          code: 'authentication_required',
        }
      : {
          message: `The model provider refused the service's key for ${title} (HTTP ${provider.status}: ${provider.message}); the operator must fix it.`,
          code: 'feature_not_available',
        };
  }
  if (provider && (provider.status === 429 || provider.status >= 500)) {
    return {
      message: `The model provider kept failing (HTTP ${provider.status}: ${provider.message})`,
      code: 'invalid_request',
      retry: true,
    };
  }
  if (result.timedOut) {
    return {
      message: `${title} did not finish its turn within AGENT_HARNESS_TURN_TIMEOUT_SECONDS and was stopped.`,
      code: 'invalid_request',
    };
  }
  if (result.diskLimitExceeded !== undefined) {
    return {
      message: `${title} was stopped: the run's files reached its disk limit (AGENT_WORKSPACE_MAX_BYTES).`,
      code: 'budget_exceeded',
      diskLimit: true,
    };
  }
  const memory = memoryFailure(title, result, memoryMb);
  if (memory) return memory;
  if (provider) {
    return {
      message: `The model provider rejected ${title}'s request (HTTP ${provider.status}): ${provider.message}`,
      code: 'invalid_request',
    };
  }
  const said =
    report.errors.at(-1) ?? (report.result?.isError ? report.result.text : undefined) ?? lastLines(result.output);
  const how =
    result.exitCode === null ? `was killed (${result.signal ?? 'signal'})` : `exited with status ${result.exitCode}`;
  return { message: `${title} ${how}${said ? `: ${said}` : ''}`, code: 'invalid_request' };
}

/** What a runtime prints when it cannot get memory: V8 (Node), Rust, C++, glibc, and the like. */
const OUT_OF_MEMORY =
  /JavaScript heap out of memory|Allocation failed|memory allocation of \d+ bytes failed|out of memory|OutOfMemory|std::bad_alloc|Cannot allocate memory/i;

/**
 * Bun's crash report for an abort(): how Claude Code (a Bun executable) dies, before it writes a
 * word of its own, when JavaScriptCore cannot reserve the address space it needs within the run's
 * per-process data limit (below about 600 MiB). Its own errors end otherwise (a status of its own,
 * or a fault), so an abort in that report is taken for want of memory.
 */
const BUN_ABORT = /panic\([^)]*\): abort\(\) called[\s\S]*Bun has crashed/;

/**
 * The CLI died for want of memory: the kernel killed a process of the run at its cgroup's limit,
 * or the CLI's runtime aborted (status 134, or 133 for V8's fatal error) saying it could not allocate.
 */
function memoryFailure(title: string, result: SandboxedCommandResult, memoryMb: number): InvocationFailure | undefined {
  const limit = `${memoryMb} MiB (AGENT_SANDBOX_MEMORY_MB=${memoryMb}; an operator's setting)`;
  if (result.oomKilled) {
    return {
      message: `${title} was killed by the kernel: the run's processes together reached their memory limit of ${limit}.`,
      code: 'budget_exceeded',
    };
  }
  const status = abortStatus(result);
  if (status === undefined || !(OUT_OF_MEMORY.test(result.output) || BUN_ABORT.test(result.output))) return undefined;
  return {
    message: `${title} ran out of memory: its runtime aborted (status ${status}) when it could not get more within the run's memory limit of ${limit}, which bounds the run's processes together and each one's data.`,
    code: 'budget_exceeded',
  };
}

/**
 * The status of a runtime's deliberate crash: abort() (SIGABRT, 134), or V8's fatal error, which
 * Node 24 ends with a trap (SIGTRAP, 133).
 */
function abortStatus(result: SandboxedCommandResult): number | undefined {
  if (result.exitCode === 134 || result.signal === 'SIGABRT') return 134;
  if (result.exitCode === 133 || result.signal === 'SIGTRAP') return 133;
  return undefined;
}

function lastLines(output: string): string {
  return output.trim().split('\n').slice(-5).join('\n').slice(-1000);
}
