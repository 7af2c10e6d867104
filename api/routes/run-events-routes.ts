import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { rejectQueryParameters } from '../validate';
import { principalOf } from '../middleware/auth';
import { teamRunOr404 } from '../team-runs';
import type { RunEventStreams } from '../run-event-stream';
import { serveRunTranscript } from '../run-transcript-stream';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/**
 * `GET /agent/runs/{runId}/events`: the run's transcript as Server-Sent Events, resumable with
 * `?after=` or `Last-Event-ID`. Everything is checked before the stream starts, so a bad request
 * gets its problem document. The stream ends when its key expires (the reconnection is then 401).
 */
export function createRunEventsRouter({
  dataSource,
  secretsKeyring,
  streams,
}: {
  dataSource: DataSource;
  secretsKeyring: SecretsKeyring;
  streams: RunEventStreams;
}): Router {
  const router = new Router();
  router.get('/agent/runs/:runId/events', async (ctx) => {
    rejectQueryParameters(ctx.query, ['after']);
    const runId = ctx.params.runId!;
    const principal = principalOf(ctx.state);
    await serveRunTranscript(ctx, streams, {
      secretsKeyring,
      loadRun: () => teamRunOr404(dataSource.manager, runId, principal.teamId),
      endsAt: principal.expiresAt ?? undefined,
    });
  });
  return router;
}
