import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { loadTimelineEntries } from '../../db/run-event-reads';
import { runTimeline } from '../../services/views/run-timeline';
import { principalOf } from '../middleware/auth';
import { teamRunOr404 } from '../team-runs';
import { rejectQueryParameters } from '../validate';

/** `GET /agent/runs/{id}/timeline`: the run's lifecycle events in order (services/views/run-timeline.ts). */
export function createTimelineRouter({ dataSource }: { dataSource: DataSource }): Router {
  const router = new Router();
  router.get('/agent/runs/:runId/timeline', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const run = await teamRunOr404(dataSource.manager, ctx.params.runId!, principalOf(ctx.state).teamId);
    ctx.body = runTimeline(run, await loadTimelineEntries(dataSource.manager, run.runId));
  });
  return router;
}
