import { randomBytes } from 'node:crypto';
import { chmod, mkdir } from 'node:fs/promises';
import { CLI_HARNESSES, type CliHarnessType } from '../../core/harnesses';
import { observeHarnessTokens } from '../../core/metrics';
import { loadGatewayAdmission } from '../../db/harness-state-reads';
import { addRunUsage } from '../../db/run-usage';
import type { StepRun } from '../../db/run-step-reads';
import type { ActivityDeps } from '../deps';
import { modelCostUsd } from '../model/model-cost';
import { socketPath } from '../sandbox/socket-path';
import { gatewaySocketDir } from '../workspace/workspace-paths';
import type { HarnessCredential } from './harness-credential';
import {
  openGatewayChannel,
  type GatewayAdmission,
  type GatewayChannel,
  type GatewayChannelOptions,
} from './model-gateway';

/** An invocation's model gateway: its channel, the token the CLI is given, and the signal of a refused key. */
export interface HarnessGateway {
  gateway: GatewayChannel;
  token: string;
  /** Aborted once the provider refused the key: the CLI's own retries could only be refused again. */
  keyRefused: AbortController;
}

/**
 * Opens the model gateway of one invocation of a run's CLI: a channel of its own, good for a
 * token that dies with it, that forwards calls only while the run is in progress and within its
 * token budget (`maxTokens`), and charges each call's usage to the run.
 */
export async function openHarnessGateway(
  { dataSource, config }: Pick<ActivityDeps, 'dataSource' | 'config'>,
  invocation: {
    runId: string;
    type: CliHarnessType;
    run: StepRun;
    maxTokens: number;
    credential: HarnessCredential;
    onToolCall?: GatewayChannelOptions['onToolCall'];
  },
): Promise<HarnessGateway> {
  const { runId, type, run, maxTokens, credential, onToolCall } = invocation;
  const spec = CLI_HARNESSES[type];
  const socketDir = gatewaySocketDir(config.workspace.dir);
  await mkdir(socketDir, { recursive: true });
  await chmod(socketDir, 0o711);
  // Good for this invocation's channel only: it dies with the channel.
  const token = `arg_${randomBytes(24).toString('base64url')}`;
  const keyRefused = new AbortController();
  const admit = async (): Promise<GatewayAdmission> => {
    const now = await loadGatewayAdmission(dataSource.manager, runId);
    if (!now || now.state !== 'INPROGRESS') {
      return { admitted: false, reason: 'not_in_progress', message: 'this run is not in progress.' };
    }
    if (now.totalTokens >= maxTokens)
      return { admitted: false, reason: 'budget_exceeded', message: `this run's ${budgetSpent(maxTokens)}` };
    return { admitted: true };
  };
  const gateway = await openGatewayChannel({
    socketPath: socketPath(socketDir, `${randomBytes(12).toString('base64url')}.sock`),
    token,
    provider: spec.provider,
    baseUrl: credential.baseUrl,
    credential: credential.credential,
    idleTimeoutMs: config.models.requestTimeoutSeconds * 1000,
    onCredentialRefused: () => keyRefused.abort(),
    ...(onToolCall ? { onToolCall } : {}),
    admit,
    onUsage: async (usage) => {
      const model = `${spec.provider}/${usage.model ?? run.config.harness?.model_id ?? 'default'}`;
      const cost = modelCostUsd(config, model, usage.totalTokens - (usage.outputTokens ?? 0), usage.outputTokens ?? 0);
      await addRunUsage(dataSource.manager, runId, usage.totalTokens, cost);
      observeHarnessTokens(type, usage);
    },
  });
  return { gateway, token, keyRefused };
}

export function budgetSpent(maxTokens: number): string {
  return `token budget of ${maxTokens} tokens is spent (raise config.max_tokens or AGENT_MAX_TOKENS).`;
}
