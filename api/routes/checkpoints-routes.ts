import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { notFound } from '../../core/api-error';
import { isUuid } from '../../core/ids';
import { checkpointListQuerySchema, forkRunSchema } from '../../core/schemas/checkpoint-schemas';
import type { UrlSigner } from '../../core/signed-urls';
import { checkpointsPage, findCheckpoint } from '../../db/checkpoint-reads';
import { findRun } from '../../db/run-reads';
import { readIdempotencyKey } from '../../services/runs/idempotency';
import type { createRunService } from '../../services/runs/run-service';
import { toCheckpointItem, toCheckpointSummary } from '../../services/views/checkpoint-views';
import { principalOf } from '../middleware/auth';
import { cursorNotIssued, decodeOpaqueCursor, encodeOpaqueCursor } from '../page-params';
import { rejectQueryParameters, validate } from '../validate';
import { answerCreated } from './runs-routes';

const PAGE_DEFAULT = 1000;

/**
 * A run's checkpoints (`/agent/runs/{runId}/checkpoints`), oldest first, each with a signed
 * download of its workspace, and forks from them (`POST /agent/runs/{runId}/fork`). Another
 * team's run or checkpoint is 404.
 */
export function createCheckpointsRouter({
  dataSource,
  runService,
  downloads,
}: {
  dataSource: DataSource;
  runService: ReturnType<typeof createRunService>;
  downloads: UrlSigner;
}): Router {
  const router = new Router();

  const loadRun = async (runId: string, teamId: string) => {
    const run = isUuid(runId) ? await findRun(dataSource.manager, runId, teamId) : null;
    if (!run) throw notFound(`No run ${runId}.`);
    return run;
  };

  router.get('/agent/runs/:runId/checkpoints', async (ctx) => {
    const query = validate(checkpointListQuerySchema, ctx.query);
    const run = await loadRun(ctx.params.runId!, principalOf(ctx.state).teamId);
    const limit = query.limit ?? PAGE_DEFAULT;
    const after = query.cursor === undefined ? undefined : decodeCheckpointCursor(query.cursor, run.runId);
    const rows = await checkpointsPage(dataSource.manager, run.runId, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const hasMore = rows.length > limit;
    ctx.body = {
      checkpoints: page.map(toCheckpointSummary),
      page_info: {
        has_next_page: hasMore,
        ...(hasMore && last
          ? { next_cursor: encodeOpaqueCursor({ r: run.runId, t: last.createdAt.toISOString(), c: last.checkpointId }) }
          : {}),
      },
    };
  });

  router.get('/agent/runs/:runId/checkpoints/:checkpointId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const { teamId } = principalOf(ctx.state);
    const run = await loadRun(ctx.params.runId!, teamId);
    const id = ctx.params.checkpointId!;
    const checkpoint = isUuid(id) ? await findCheckpoint(dataSource.manager, teamId, run.runId, id) : undefined;
    if (!checkpoint) throw notFound(`Run ${run.runId} has no checkpoint ${id}.`);
    ctx.body = toCheckpointItem(checkpoint, downloads);
  });

  router.post('/agent/runs/:runId/fork', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(forkRunSchema, ctx.state.body ?? {});
    const key = readIdempotencyKey(ctx.get('idempotency-key') || undefined);
    answerCreated(ctx, await runService.forkRun(principalOf(ctx.state), ctx.params.runId!, body, key));
  });

  return router;
}

/** Where a page of a run's checkpoints continues. */
function decodeCheckpointCursor(cursor: string, runId: string): { createdAt: string; checkpointId: string } {
  const payload = decodeOpaqueCursor(cursor);
  const { r, t, c } = payload;
  if (r !== runId || typeof t !== 'string' || typeof c !== 'string' || !isUuid(c) || Number.isNaN(Date.parse(t))) {
    throw cursorNotIssued();
  }
  return { createdAt: t, checkpointId: c };
}
