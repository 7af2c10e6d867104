import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import { loadTimelineEntries } from '../../db/run-events';
import { findRun } from '../../db/run-queries';
import { notFound } from '../../core/api-error';
import { runTimeline } from '../../services/views/run-timeline';
import { principalOf } from '../middleware/auth';
import { rejectQueryParameters } from '../validate';

/** `GET /agent/runs/{id}/timeline`: the run's lifecycle events in order (services/views/run-timeline.ts). */
export function createTimelineRouter({ dataSource }: { dataSource: DataSource }): Router {
  const router = new Router();
  router.get('/agent/runs/:runId/timeline', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const runId = ctx.params.runId!;
    const run = isUuid(runId) ? await findRun(dataSource.manager, runId, principalOf(ctx.state).teamId) : null;
    if (!run) throw notFound(`No run ${runId}.`);
    ctx.body = runTimeline(run, await loadTimelineEntries(dataSource.manager, run.runId));
  });
  return router;
}
