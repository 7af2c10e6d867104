import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import { findArtifact } from '../../db/artifact-reads';
import { findPlan } from '../../db/plan-reads';
import { findPullRequest, findRunByPullRequestUrl } from '../../db/pull-request-reads';
import { findRun } from '../../db/run-reads';
import { invalid, notFound } from '../../core/api-error';
import { canonicalReferenceUrl } from '../../core/external-references';
import { externalReferenceQuerySchema } from '../../core/schemas/agent-schemas';
import { findRunByExternalReference } from '../../db/external-reference-reads';
import {
  signedUrl,
  toArtifactResponse,
  toPlanResponse,
  toPullRequestResponse,
} from '../../services/views/artifact-views';
import type { UrlSigner } from '../../core/signed-urls';
import { principalOf } from '../middleware/auth';
import { rejectQueryParameters, validate } from '../validate';

/**
 * `GET /agent/artifacts/{uid}`: an artifact of the caller's team, a file with a signed download URL,
 * a plan version with its markdown, or a pull request;
 * `…/download`, and a conversation's screenshot (an image artifact of one of its runs), redirect
 * to that URL; `GET /agent/run-by-external-reference` finds the run that reported a URL, or whose
 * pull request is there.
 */
export function createArtifactsRouter({
  dataSource,
  downloads,
}: {
  dataSource: DataSource;
  downloads: UrlSigner;
}): Router {
  const router = new Router();
  const teamArtifact = async (uid: string, teamId: string) => {
    const artifact = isUuid(uid) ? await findArtifact(dataSource.manager, uid, teamId) : null;
    if (!artifact) throw notFound(`No artifact ${uid}.`);
    return artifact;
  };

  router.get('/agent/artifacts/:artifactUid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const uid = ctx.params.artifactUid!;
    const teamId = principalOf(ctx.state).teamId;
    // A plan has no file to download: its markdown is in the answer. Nor has a pull request.
    const plan = isUuid(uid) ? await findPlan(dataSource.manager, uid, teamId) : null;
    const pullRequest = isUuid(uid) && !plan ? await findPullRequest(dataSource.manager, uid, teamId) : null;
    if (plan) ctx.body = toPlanResponse(plan);
    else if (pullRequest) ctx.body = toPullRequestResponse(pullRequest);
    else ctx.body = toArtifactResponse(await teamArtifact(uid, teamId), downloads);
  });

  router.get('/agent/artifacts/:artifactUid/download', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const artifact = await teamArtifact(ctx.params.artifactUid!, principalOf(ctx.state).teamId);
    ctx.redirect(signedUrl(downloads, 'artifacts', artifact.artifactUid));
  });

  router.get('/agent/conversations/:conversationId/screenshots/:screenshotUid/download', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const { conversationId, screenshotUid } = ctx.params as { conversationId: string; screenshotUid: string };
    const teamId = principalOf(ctx.state).teamId;
    const artifact = isUuid(screenshotUid) ? await findArtifact(dataSource.manager, screenshotUid, teamId) : null;
    const run = artifact && (await findRun(dataSource.manager, artifact.runId, teamId));
    if (!artifact || !artifact.mimeType.startsWith('image/') || run?.conversationId !== conversationId) {
      throw notFound(`No screenshot ${screenshotUid} in conversation ${conversationId}.`);
    }
    ctx.redirect(signedUrl(downloads, 'artifacts', artifact.artifactUid));
  });
  /** The run that reported `url` or delivered a pull request there; the newer when both did. */
  const runByUrl = async (teamId: string, url: string) => {
    const reported = await findRunByExternalReference(dataSource.manager, teamId, url);
    const delivered = await findRunByPullRequestUrl(dataSource.manager, teamId, url);
    if (!reported || !delivered) return reported?.runId ?? delivered?.runId ?? null;
    return reported.createdAt > delivered.createdAt ? reported.runId : delivered.runId;
  };
  router.get('/agent/run-by-external-reference', async (ctx) => {
    const { url } = validate(externalReferenceQuerySchema, ctx.query, 'query');
    let canonical: string;
    try {
      canonical = canonicalReferenceUrl(url);
    } catch (err) {
      throw invalid(`Query parameter \`url\`: ${(err as Error).message}.`);
    }
    const runId = await runByUrl(principalOf(ctx.state).teamId, canonical);
    if (!runId) throw notFound(`No run of your team reported ${canonical}.`);
    ctx.body = { run_id: runId };
  });
  return router;
}
