import type { Context } from 'koa';
import type { Run } from '../db/rows/run';
import type { StoredRunEvent } from '../db/run-event-reads';
import { eventData, lastEventIdOf, parseStreamStart, type RunEventStreams } from './run-event-stream';
import { maskSecrets, runSecretValues } from '../core/run-secrets';
import type { SecretsKeyring } from '../core/secrets-keyring';

/** What a reader of the stream adds to each event's `data`, given the batch it is in. */
export type EventDecoration = (run: Run, batch: StoredRunEvent[]) => Promise<(event: StoredRunEvent) => object>;

/**
 * Answers with a run's transcript as Server-Sent Events, from `?after=` or `Last-Event-ID` (both
 * checked before `loadRun`, so a malformed request never looks anything up), with the run's
 * secrets masked as the transcript page masks them: a worker may have recorded a credential an
 * MCP server echoed.
 */
export async function serveRunTranscript(
  ctx: Context,
  streams: RunEventStreams,
  options: { loadRun: () => Promise<Run>; secretsKeyring: SecretsKeyring; decorate?: EventDecoration; endsAt?: Date },
): Promise<void> {
  const afterId = parseStreamStart(ctx.query, lastEventIdOf(ctx.headers));
  const run = await options.loadRun();
  const secrets = runSecretValues(run.config, options.secretsKeyring);
  await streams.serve(ctx, {
    runId: run.runId,
    afterId,
    endsAt: options.endsAt,
    present: async (events) => {
      const masked = maskSecrets(events, secrets);
      const extra = options.decorate ? await options.decorate(run, masked) : undefined;
      return masked.map((e) => ({ ...eventData(run.runId, e), ...extra?.(e) }));
    },
  });
}
