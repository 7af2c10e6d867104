import { CLI_HARNESSES, isCliHarness } from '../../core/harnesses';
import { HARNESS_USAGE_COUNTERS, type HarnessUsageResponse } from '../../core/schemas/harness-usage-schemas';
import type { HarnessState } from '../../db/harness-state-reads';

/**
 * A run's harness usage as the official clients read it: the snapshot the service keeps of the
 * CLI's own counters (summed over its invocations), or `available: false` for runs of this
 * service's loop, of a CLI without an envelope (Gemini CLI), or before the first report.
 */
export function toHarnessUsage(
  run: { runId: string; conversationId: string },
  state: HarnessState | null,
  now: Date,
): HarnessUsageResponse {
  const none = {
    available: false,
    run_id: run.runId,
    conversation_id: run.conversationId,
    age_seconds: null,
    usage: null,
  };
  const envelope = state && isCliHarness(state.harness) ? CLI_HARNESSES[state.harness].usageEnvelope : undefined;
  if (!state || !envelope || !state.capturedAt) return none;
  const usage = Object.fromEntries(
    HARNESS_USAGE_COUNTERS[envelope].flatMap((k) =>
      state.usage?.[k] === undefined ? [] : [[k, Number(state.usage[k])]],
    ),
  );
  const byName = Object.fromEntries(Object.entries(state.toolCalls ?? {}).map(([k, v]) => [k, Number(v)]));
  const total = Object.values(byName).reduce((a, b) => a + b, 0);
  const snapshot = {
    coverage: {
      tokenStatus: Object.keys(usage).length ? ('known' as const) : ('unavailable' as const),
      toolStatus: 'known' as const,
    },
    payload: { ...(Object.keys(usage).length ? { usage } : {}), toolCalls: { byName, total } },
  };
  const common = {
    capturedAt: state.capturedAt.toISOString(),
    captureSequence: state.captureSequence,
    executionId: state.executionId,
    metricsVersion: 1 as const,
    snapshot,
  };
  return {
    available: true,
    run_id: run.runId,
    conversation_id: run.conversationId,
    age_seconds: Math.max(0, Math.floor((now.getTime() - state.capturedAt.getTime()) / 1000)),
    usage: envelope === 'CLAUDE_CODE' ? { ...common, harness: 'CLAUDE_CODE' } : { ...common, harness: 'CODEX' },
  };
}
