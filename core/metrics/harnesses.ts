import { Counter } from 'prom-client';
import { metricsRegistry } from './registry';

/** Third-party harnesses: the tokens their model calls used through the gateway, and how their invocations ended. */

export const harnessTokens = new Counter({
  name: 'agent_runs_harness_tokens_total',
  help: "Tokens of harness runs' model calls through the model gateway, by harness and kind (input, output, cache_read, cache_write).",
  labelNames: ['harness', 'kind'] as const,
  registers: [metricsRegistry],
});

export const harnessInvocations = new Counter({
  name: 'agent_runs_harness_invocations_total',
  help: "Invocations of a harness's CLI (one per turn and per follow-up), by harness and outcome (ok, failed, retried, cancelled).",
  labelNames: ['harness', 'outcome'] as const,
  registers: [metricsRegistry],
});

export function observeHarnessTokens(
  harness: string,
  usage: {
    inputTokens?: number;
    outputTokens?: number;
    cacheReadInputTokens?: number;
    cacheCreationInputTokens?: number;
  },
): void {
  const kinds = {
    input: usage.inputTokens,
    output: usage.outputTokens,
    cache_read: usage.cacheReadInputTokens,
    cache_write: usage.cacheCreationInputTokens,
  };
  for (const [kind, value] of Object.entries(kinds)) if (value) harnessTokens.inc({ harness, kind }, value);
}

export function observeHarnessInvocation(harness: string, outcome: 'ok' | 'failed' | 'retried' | 'cancelled'): void {
  harnessInvocations.inc({ harness, outcome });
}
