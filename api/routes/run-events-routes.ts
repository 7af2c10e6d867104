import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import { findRun } from '../../db/run-queries';
import { invalid, notFound } from '../api-error';
import { principalOf } from '../middleware/auth';
import { eventData, lastEventIdOf, parseStreamStart, type RunEventStreams } from '../run-event-stream';
import { maskSecrets, runSecretValues } from '../run-secrets';

/**
 * `GET /agent/runs/{runId}/events`: the run's transcript as Server-Sent Events, resumable with
 * `?after=` or `Last-Event-ID`. Everything is checked before the stream starts, so a bad request
 * gets its problem document.
 */
export function createRunEventsRouter({
  dataSource,
  secretsKey,
  streams,
}: {
  dataSource: DataSource;
  secretsKey: Buffer;
  streams: RunEventStreams;
}): Router {
  const router = new Router();
  router.get('/agent/runs/:runId/events', async (ctx) => {
    const unknown = Object.keys(ctx.query).find((name) => name !== 'after');
    if (unknown !== undefined) throw invalid(`Unknown query parameter \`${unknown}\`; only \`after\` is accepted.`);
    const afterId = parseStreamStart(ctx.query, lastEventIdOf(ctx.headers));
    const runId = ctx.params.runId!;
    const run = isUuid(runId) ? await findRun(dataSource.manager, runId, principalOf(ctx.state).teamId) : null;
    if (!run) throw notFound(`No run ${runId}.`);
    // As the transcript page masks them: a worker may have recorded a credential an MCP server echoed.
    const secrets = runSecretValues(run.config, secretsKey);
    await streams.serve(ctx, {
      runId: run.runId,
      afterId,
      present: async (events) => maskSecrets(events, secrets).map((e) => eventData(run.runId, e)),
    });
  });
  return router;
}
