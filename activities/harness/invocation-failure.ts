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
}: {
  title: string;
  result: SandboxedCommandResult;
  report: InvocationReport;
  gateway: Pick<GatewayChannel, 'refusal' | 'providerError'>;
  secretName?: string;
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
  if (result.oomKilled) {
    return {
      message: `${title} was killed: the run's processes ran out of memory (AGENT_SANDBOX_MEMORY_MB).`,
      code: 'budget_exceeded',
    };
  }
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

function lastLines(output: string): string {
  return output.trim().split('\n').slice(-5).join('\n').slice(-1000);
}
