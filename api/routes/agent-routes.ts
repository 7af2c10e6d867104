import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import type { UrlSigner } from '../../core/signed-urls';
import { isUuid } from '../../core/ids';
import { artifactsOfRuns } from '../../db/artifact-reads';
import { listTeamSkills } from '../../db/environment-skill-reads';
import { listConversationRuns } from '../../db/run-reads';
import { notFound } from '../../core/api-error';
import { loadConversationActions } from '../conversation-actions';
import { loadConversationSteps } from '../conversation-steps';
import { encodeActionCursor, parseConversationQuery } from '../conversation-query';
import { principalOf } from '../middleware/auth';
import { teamConversationRunsOr404, teamRunOr404 } from '../team-runs';
import { cursorNotIssued } from '../page-params';
import { toRunItem } from '../../services/views/run-item';
import { toSkillList } from '../../services/views/skill-list';
import { agentListQuerySchema } from '../../core/schemas/agent-schemas';
import { rejectQueryParameters, validate } from '../validate';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/**
 * `GET /agent`: skills found in the caller's environments, shaped as the client libraries expect
 * (services/views/skill-list.ts);
 * `GET /agent/conversations/{id}`: a conversation's runs, advertised skills and a page of its ordered actions
 * (with its `steps` on the first page); `GET /agent/runs/{id}/conversation`: the run's conversation as `steps`.
 */
export function createAgentRouter({
  dataSource,
  secretsKeyring,
  sessionLinks,
}: {
  dataSource: DataSource;
  secretsKeyring: SecretsKeyring;
  /** Signs each run's `session_link` as it is read. */
  sessionLinks: UrlSigner;
}): Router {
  const router = new Router();

  router.get('/agent', async (ctx) => {
    const query = validate(agentListQuerySchema, ctx.query, 'query');
    const rows = await listTeamSkills(dataSource.manager, principalOf(ctx.state).teamId, {
      repository: query.repo,
      includeMalformed: query.include_malformed_skills === 'true',
    });
    ctx.body = toSkillList(rows, query.sort_by);
  });

  router.get('/agent/conversations/:conversationId', async (ctx) => {
    const conversationId = ctx.params.conversationId!;
    const query = parseConversationQuery(ctx.query, conversationId);
    if (!isUuid(conversationId)) throw notFound(`No conversation ${conversationId}.`);
    const conversation = await listConversationRuns(dataSource.manager, conversationId, principalOf(ctx.state).teamId);
    if (conversation.length === 0) throw notFound(`No conversation ${conversationId}.`);
    const runs = conversation.map((c) => c.run);
    if (query.after && !runs.some((r) => r.runId === query.after!.runId)) throw cursorNotIssued();
    const advertised = new Map<string, unknown>();
    for (const skill of conversation.flatMap((c) => c.advertisedSkills)) advertised.set(skill.name, skill);
    const { actions, next } = await loadConversationActions(dataSource.manager, runs, secretsKeyring, query);
    const artifacts = await artifactsOfRuns(
      dataSource.manager,
      runs.map((r) => r.runId),
    );
    // The newest client's shape, on the first page (each page would repeat it whole).
    const steps = query.after ? undefined : await loadConversationSteps(dataSource.manager, runs, secretsKeyring);
    ctx.body = {
      conversation_id: conversationId,
      ...(steps ? { steps } : {}),
      runs: runs.map((r) => toRunItem(r, sessionLinks, secretsKeyring, artifacts.get(r.runId))),
      advertised_skills: [...advertised.values()],
      actions,
      page_info: {
        has_next_page: next !== undefined,
        ...(next ? { next_cursor: encodeActionCursor(conversationId, next) } : {}),
      },
    };
  });

  router.get('/agent/runs/:runId/conversation', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const teamId = principalOf(ctx.state).teamId;
    const run = await teamRunOr404(dataSource.manager, ctx.params.runId!, teamId);
    const runs = await teamConversationRunsOr404(dataSource.manager, run.conversationId, teamId);
    ctx.body = {
      conversation_id: run.conversationId,
      steps: await loadConversationSteps(dataSource.manager, runs, secretsKeyring),
    };
  });

  return router;
}
