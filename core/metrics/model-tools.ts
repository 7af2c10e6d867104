import { Counter, Histogram } from 'prom-client';
import { LONG_BUCKETS, metricsRegistry } from './registry';

/** Model and tools: agent steps, model calls (duration, tokens, cost) and tool calls. */

export const stepDuration = new Histogram({
  name: 'agent_runs_step_duration_seconds',
  help: 'Agent steps (a model call and the tool calls it asked for), by outcome: ok or error (retried by Temporal or failing the run).',
  labelNames: ['outcome'] as const,
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

export const modelCallDuration = new Histogram({
  name: 'agent_runs_model_call_duration_seconds',
  help: 'Model provider calls by model and outcome (ok, error).',
  labelNames: ['model', 'outcome'] as const,
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

export const modelTokens = new Counter({
  name: 'agent_runs_model_tokens_total',
  help: 'Tokens of model calls by model and kind (input, output).',
  labelNames: ['model', 'kind'] as const,
  registers: [metricsRegistry],
});

export const modelCost = new Counter({
  name: 'agent_runs_model_cost_usd_total',
  help: 'What model calls cost in USD, by model (models with a price only: MODEL_PRICES).',
  labelNames: ['model'] as const,
  registers: [metricsRegistry],
});

export const toolCalls = new Counter({
  name: 'agent_runs_tool_calls_total',
  help: 'Tool calls by tool (built-in name, `mcp` for MCP server tools, `unknown`) and outcome (ok, error, interrupted).',
  labelNames: ['tool', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const toolCallDuration = new Histogram({
  name: 'agent_runs_tool_call_duration_seconds',
  help: 'Tool calls by tool.',
  labelNames: ['tool'] as const,
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

/** Times `fn` into `histogram` with `outcome` ok or error, and returns or throws what it did. */
async function timed<T, L extends string>(
  histogram: Histogram<L>,
  labels: Partial<Record<L, string>>,
  fn: () => Promise<T>,
): Promise<T> {
  const end = histogram.startTimer(labels);
  try {
    const result = await fn();
    end({ outcome: 'ok' } as Partial<Record<L, string>>);
    return result;
  } catch (err) {
    end({ outcome: 'error' } as Partial<Record<L, string>>);
    throw err;
  }
}

export function observeStep<T>(fn: () => Promise<T>): Promise<T> {
  return timed(stepDuration, {}, fn);
}

/**
 * One model call: its duration, and on success its tokens and cost (null: the model has no
 * price). `configured`: the operator named the model (a price, a context window, the default).
 */
export async function observeModelCall<T extends { inputTokens: number; outputTokens: number }>(
  modelId: string,
  options: { configured: boolean; costUsd: (reply: T) => number | null },
  call: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  let reply: T;
  try {
    reply = await call();
  } catch (err) {
    const model = modelLabel(modelId, options.configured);
    modelCallDuration.observe({ model, outcome: 'error' }, (performance.now() - started) / 1000);
    throw err;
  }
  // A provider answered for it: a real model, fit to be a label.
  const model = modelLabel(modelId, true);
  modelCallDuration.observe({ model, outcome: 'ok' }, (performance.now() - started) / 1000);
  modelTokens.inc({ model, kind: 'input' }, reply.inputTokens);
  modelTokens.inc({ model, kind: 'output' }, reply.outputTokens);
  const cost = options.costUsd(reply);
  if (cost !== null) modelCost.inc({ model }, cost);
  return reply;
}

/** One tool call; its result says whether it failed. */
export async function observeToolCall<T extends { isError: boolean }>(
  tool: string,
  call: () => Promise<T>,
): Promise<T> {
  const end = toolCallDuration.startTimer({ tool });
  try {
    const result = await call();
    toolCalls.inc({ tool, outcome: result.isError ? 'error' : 'ok' });
    return result;
  } catch (err) {
    toolCalls.inc({ tool, outcome: 'error' });
    throw err;
  } finally {
    end();
  }
}

/** A tool call that did not run: interrupted by a worker's death, or an unknown tool (error). */
export function observeToolCallNotRun(tool: string, outcome: 'interrupted' | 'error'): void {
  toolCalls.inc({ tool, outcome });
}

/** Most distinct model labels a process gives out; further models count as `<provider>/other`. */
const MAX_MODEL_LABELS = 100;
const modelLabels = new Set<string>();

/**
 * The label of a model id: as is once it is known (configured by the operator, or a provider
 * answered for it), up to MAX_MODEL_LABELS; otherwise `<provider>/other`, since callers choose
 * model ids freely.
 */
function modelLabel(modelId: string, known: boolean): string {
  if (modelLabels.has(modelId)) return modelId;
  if (known && modelLabels.size < MAX_MODEL_LABELS) {
    modelLabels.add(modelId);
    return modelId;
  }
  return `${modelId.slice(0, Math.max(0, modelId.indexOf('/')))}/other`;
}
