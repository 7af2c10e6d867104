import Router, { type RouterMiddleware } from '@koa/router';
import { z } from 'zod';
import { isUuid } from '../../core/ids';
import { isTerminal } from '../../core/run-state';
import type { DataSource } from 'typeorm';
import { artifactsOfRuns } from '../../db/artifact-reads';
import { handoffAttachmentsOfTurn } from '../../db/attachment-reads';
import { findRun, listRuns } from '../../db/run-reads';
import { pendingApprovalsOf } from '../../db/run-approval-reads';
import { loadHarnessState } from '../../db/harness-state-reads';
import { toHarnessUsage } from '../../services/views/harness-usage';
import { invalid, notFound } from '../../core/api-error';
import { toHandoffItem } from '../../services/views/artifact-views';
import type { UrlSigner } from '../../core/signed-urls';
import { readIdempotencyKey, REPLAYED_HEADER } from '../../services/runs/idempotency';
import type { RunAccepted } from '../../services/runs/run-service';
import { encodeCursor, parseListRunsQuery } from '../list-runs-query';
import { principalOf } from '../middleware/auth';
import { toRunItem } from '../../services/views/run-item';
import { teamConversationRunsOr404, teamRunOr404 } from '../team-runs';
import { runStatesOfTaskState, toTaskItem } from '../../services/views/task-item';
import type { createRunService } from '../../services/runs/run-service';
import { createRunSchema, factoryDispatchSchema, followupSchema } from '../../core/schemas/run-schemas';
import { approvalDecisionSchema } from '../../core/schemas/approval-schemas';
import { rejectQueryParameters, storablePathId, validate } from '../validate';
import type { SecretsKeyring } from '../../core/secrets-keyring';

export interface RunsRoutesDeps {
  dataSource: DataSource;
  runService: ReturnType<typeof createRunService>;
  secretsKeyring: SecretsKeyring;
  downloads: UrlSigner;
  /** Signs each run's `session_link` as it is read. */
  sessionLinks: UrlSigner;
}

const emptyBodySchema = z.strictObject({});

/** The runs of a page that wait for a person: only theirs have a pending approval to read. */
const blockedRunIds = (runs: { runId: string; state: string }[]) =>
  runs.filter((r) => r.state === 'BLOCKED').map((r) => r.runId);

type Answerable = { status: number; body: unknown; set(name: string, value: string): void };

/** 201 with the new run (or the replay of its creation). */
export function answerCreated(ctx: Answerable, run: RunAccepted): void {
  ctx.status = 201;
  ctx.set('Location', `/api/v1/agent/runs/${run.runId}`);
  if (run.replayed) ctx.set(REPLAYED_HEADER, 'true');
  ctx.body = {
    run_id: run.runId,
    task_id: run.runId,
    state: run.state,
    ...(run.forkedFrom ? { forked_from: run.forkedFrom } : {}),
  };
}

/** The run endpoints of the wire contract (plus the older `POST /agent/run`). */
export function createRunsRouter({
  dataSource,
  runService,
  secretsKeyring,
  downloads,
  sessionLinks,
}: RunsRoutesDeps): Router {
  const router = new Router();
  router.param('uid', storablePathId('factory'));

  const findTeamRun = (runId: string, teamId: string) => teamRunOr404(dataSource.manager, runId, teamId);

  /** The run as `GET /agent/runs/{runId}` shows it: with its artifacts and, while BLOCKED, what waits. */
  const runItemOf = async (run: Awaited<ReturnType<typeof findTeamRun>>) => {
    const artifacts = await artifactsOfRuns(dataSource.manager, [run.runId]);
    const blocked = await pendingApprovalsOf(dataSource.manager, blockedRunIds([run]));
    return toRunItem(run, sessionLinks, secretsKeyring, artifacts.get(run.runId), undefined, blocked.get(run.runId));
  };

  const create: RouterMiddleware = async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(createRunSchema, ctx.state.body);
    const key = readIdempotencyKey(ctx.get('idempotency-key') || undefined);
    answerCreated(ctx, await runService.createRun(principalOf(ctx.state), body, key));
  };
  router.post('/agent/runs', create);
  router.post('/agent/run', create);

  router.post('/agent/factories/:uid/runs', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(factoryDispatchSchema, ctx.state.body);
    const key = readIdempotencyKey(ctx.get('idempotency-key') || undefined);
    answerCreated(ctx, await runService.dispatchToFactory(principalOf(ctx.state), ctx.params.uid!, body, key));
  });

  /** A page of the team's runs as `GET /agent/runs` lists them, for `rawQuery`. */
  const runPage = async (ctx: Parameters<RouterMiddleware>[0], rawQuery: Record<string, unknown>) => {
    const query = parseListRunsQuery(rawQuery as typeof ctx.query);
    const { teamId } = principalOf(ctx.state);
    const ancestor = query.filters.ancestorRunId;
    // The official clients document it: the referenced run must exist and be the caller's.
    if (ancestor !== undefined && !(isUuid(ancestor) && (await findRun(dataSource.manager, ancestor, teamId)))) {
      throw invalid(`Query parameter \`ancestor_run_id\`: no run ${ancestor} in your team.`);
    }
    const { runs, hasMore } = await listRuns(dataSource.manager, { teamId, ...query });
    const last = runs[runs.length - 1];
    const sortValue = (run: NonNullable<typeof last>) =>
      query.sortBy === 'title'
        ? run.title
        : query.sortBy === 'agent'
          ? (run.skillSpec ?? '')
          : (query.sortBy === 'created_at' ? run.createdAt : run.updatedAt).toISOString();
    const artifacts = await artifactsOfRuns(
      dataSource.manager,
      runs.map((r) => r.runId),
    );
    const blocked = await pendingApprovalsOf(dataSource.manager, blockedRunIds(runs));
    return {
      runs: runs.map((run) =>
        toRunItem(run, sessionLinks, secretsKeyring, artifacts.get(run.runId), undefined, blocked.get(run.runId)),
      ),
      page_info: {
        has_next_page: hasMore,
        ...(hasMore && last ? { next_cursor: encodeCursor(query, { value: sortValue(last), runId: last.runId }) } : {}),
      },
    };
  };

  router.get('/agent/runs', async (ctx) => {
    ctx.body = await runPage(ctx, ctx.query);
  });

  // The oldest official client (warp-sdk 0.1.1) reads runs as tasks: the same list and item.
  router.get('/agent/tasks', async (ctx) => {
    const states = ctx.query.state === undefined ? undefined : [ctx.query.state].flat();
    const query = {
      ...ctx.query,
      ...(states ? { state: states.flatMap((s) => runStatesOfTaskState(String(s))) } : {}),
    };
    const page = await runPage(ctx, query);
    ctx.body = { tasks: page.runs.map(toTaskItem), page_info: page.page_info };
  });

  router.get('/agent/tasks/:taskId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const run = await findTeamRun(ctx.params.taskId!, principalOf(ctx.state).teamId);
    const artifacts = await artifactsOfRuns(dataSource.manager, [run.runId]);
    ctx.body = toTaskItem(toRunItem(run, sessionLinks, secretsKeyring, artifacts.get(run.runId)));
  });

  router.get('/agent/runs/:runId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const run = await findTeamRun(ctx.params.runId!, principalOf(ctx.state).teamId);
    ctx.body = await runItemOf(run);
  });

  router.post('/agent/runs/:runId/approvals/:approvalId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(approvalDecisionSchema, ctx.state.body);
    const { runId, approvalId } = ctx.params as { runId: string; approvalId: string };
    ctx.state.auditDetails = { approval_id: approvalId, decision: body.decision };
    await runService.decideApproval(principalOf(ctx.state), runId, approvalId, body);
    ctx.body = await runItemOf(await findTeamRun(runId, principalOf(ctx.state).teamId));
  });

  // What a CLI harness reported it used (its own counters), for the official clients' `get_harness_usage`.
  router.get('/agent/runs/:runId/harness-usage', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const run = await findTeamRun(ctx.params.runId!, principalOf(ctx.state).teamId);
    ctx.body = toHarnessUsage(run, await loadHarnessState(dataSource.manager, run.runId), new Date());
  });

  // The files of the latest ended turn (execution) that let the work continue elsewhere.
  router.get('/agent/runs/:runId/handoff/attachments', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const run = await findTeamRun(ctx.params.runId!, principalOf(ctx.state).teamId);
    const endedTurn = isTerminal(run.state) ? run.turn : run.turn - 1;
    const files = endedTurn >= 1 ? await handoffAttachmentsOfTurn(dataSource.manager, run.runId, endedTurn) : [];
    ctx.body = { attachments: files.map((f) => toHandoffItem(f, downloads)) };
  });

  /** The newest run of a conversation of the caller's team: what its follow-ups and interrupts go to. */
  const newestRunOf = async (ctx: Parameters<RouterMiddleware>[0], conversationId: string): Promise<string> =>
    (await teamConversationRunsOr404(dataSource.manager, conversationId, principalOf(ctx.state).teamId)).at(-1)!.runId;

  const followupTo = async (ctx: Parameters<RouterMiddleware>[0], runId: string) => {
    const body = validate(followupSchema, ctx.state.body);
    const key = readIdempotencyKey(ctx.get('idempotency-key') || undefined);
    const accepted = await runService.sendFollowup(principalOf(ctx.state), runId, body, key);
    ctx.status = 200;
    if (accepted.replayed) ctx.set(REPLAYED_HEADER, 'true');
    ctx.body = {
      run_id: accepted.runId,
      state: accepted.state,
      ...(accepted.followup?.id ? { followup_id: accepted.followup.id } : {}),
      ...(accepted.followup ? { outcome: accepted.followup.outcome } : {}),
    };
  };

  router.post('/agent/runs/:runId/followups', async (ctx) => {
    rejectQueryParameters(ctx.query);
    await followupTo(ctx, ctx.params.runId!);
  });

  // The conversation's newest run of the caller's team takes it, as the official clients document.
  router.post('/agent/conversations/:conversationId/followups', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const conversationId = ctx.params.conversationId!;
    await followupTo(ctx, await newestRunOf(ctx, conversationId));
  });

  const interrupt = async (ctx: Parameters<RouterMiddleware>[0], runId: string) => {
    validate(emptyBodySchema, ctx.state.body);
    await runService.interruptRun(principalOf(ctx.state), runId);
    ctx.status = 202;
    ctx.body = { run_id: runId };
  };

  router.post('/agent/runs/:runId/interrupt', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const runId = ctx.params.runId!;
    if (!isUuid(runId)) throw notFound(`No run ${runId}.`);
    await interrupt(ctx, runId);
  });

  // The conversation's newest run, as for its follow-ups.
  router.post('/agent/conversations/:conversationId/interrupt', async (ctx) => {
    rejectQueryParameters(ctx.query);
    await interrupt(ctx, await newestRunOf(ctx, ctx.params.conversationId!));
  });

  router.delete('/agent/runs/:runId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    validate(emptyBodySchema, ctx.state.body);
    await runService.deleteRun(principalOf(ctx.state), ctx.params.runId!);
    ctx.status = 204;
  });

  router.post('/agent/runs/:runId/cancel', async (ctx) => {
    rejectQueryParameters(ctx.query);
    validate(emptyBodySchema, ctx.state.body);
    const runId = ctx.params.runId!;
    await runService.cancelRun(principalOf(ctx.state), runId);
    ctx.status = 200;
    ctx.body = runId;
    ctx.type = 'text/plain; charset=utf-8';
  });

  return router;
}
