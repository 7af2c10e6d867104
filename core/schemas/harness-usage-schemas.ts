import { z } from './zod';

/** `GET /agent/runs/{runId}/harness-usage`: a CLI harness's own usage counters, as the official clients type them. */

const count = z.number().int().nonnegative();
const coverageStatus = z.enum(['known', 'partial', 'unavailable']);

/** The native counters each envelope carries: Claude Code's categories, Codex's checkpoint counters. */
export const HARNESS_USAGE_COUNTERS = {
  CLAUDE_CODE: ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'],
  CODEX: [
    'input_tokens',
    'cached_input_tokens',
    'cache_write_input_tokens',
    'output_tokens',
    'reasoning_output_tokens',
    'total_tokens',
  ],
} as const;
export type HarnessUsageEnvelopeName = keyof typeof HARNESS_USAGE_COUNTERS;

function envelopeSchema<H extends HarnessUsageEnvelopeName>(harness: H) {
  const counters = Object.fromEntries(HARNESS_USAGE_COUNTERS[harness].map((k) => [k, count.optional()]));
  return z.object({
    capturedAt: z.iso.datetime(),
    captureSequence: count,
    executionId: count,
    harness: z.literal(harness),
    metricsVersion: z.literal(1),
    snapshot: z.object({
      coverage: z.object({ tokenStatus: coverageStatus, toolStatus: coverageStatus }),
      payload: z.object({
        usage: z.object(counters).optional(),
        toolCalls: z
          .object({ byName: z.record(z.string(), count), total: count })
          .optional()
          .openapi({ description: 'Tool invocations by name; `total` is the sum of `byName`.' }),
      }),
    }),
  });
}

export const harnessUsageResponseSchema = z
  .object({
    available: z.boolean().openapi({
      description:
        'Whether the run has a usage snapshot: only runs of a CLI harness with an envelope (Claude Code, Codex) that reported usage do.',
    }),
    run_id: z.string(),
    conversation_id: z.string(),
    age_seconds: count.nullable().openapi({ description: 'Seconds since the snapshot was captured.' }),
    usage: z
      .discriminatedUnion('harness', [envelopeSchema('CLAUDE_CODE'), envelopeSchema('CODEX')])
      .nullable()
      .openapi({ description: "The CLI's cumulative counters over the run's invocations, in its own categories." }),
  })
  .openapi('RunHarnessUsage');

export type HarnessUsageResponse = z.infer<typeof harnessUsageResponseSchema>;
