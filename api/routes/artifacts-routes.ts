import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import { findArtifact } from '../../db/artifacts';
import { notFound } from '../../core/api-error';
import { toArtifactResponse, type DownloadSigner } from '../../services/views/artifact-views';
import { principalOf } from '../middleware/auth';
import { rejectQueryParameters } from '../validate';

/** `GET /agent/artifacts/{uid}`: an artifact of the caller's team, with a signed download URL. */
export function createArtifactsRouter({
  dataSource,
  downloads,
}: {
  dataSource: DataSource;
  downloads: DownloadSigner;
}): Router {
  const router = new Router();
  router.get('/agent/artifacts/:artifactUid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const uid = ctx.params.artifactUid!;
    const artifact = isUuid(uid) ? await findArtifact(dataSource.manager, uid, principalOf(ctx.state).teamId) : null;
    if (!artifact) throw notFound(`No artifact ${uid}.`);
    ctx.body = toArtifactResponse(artifact, downloads);
  });
  return router;
}
