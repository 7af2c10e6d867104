import Router from '@koa/router';
import { pendingFollowups } from '../../db/run-store';
import { z } from 'zod';
import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import { isUuid } from '../../core/ids';
import { artifactsOfRuns } from '../../db/artifacts';
import { loadRunEvents } from '../../db/run-events';
import { rowToRun } from '../../db/run-queries';
import { notFound } from '../api-error';
import { principalOf } from '../middleware/auth';
import { toRunItem } from '../run-item';
import { maskSecrets, runSecretValues } from '../run-secrets';
import { rejectQueryParameters, validate } from '../validate';

const agentListQuerySchema = z.strictObject({
  refresh: z.enum(['true', 'false']).optional(),
  repo: z.string().max(200).optional(),
  sort_by: z.enum(['name', 'last_run']).optional(),
});

interface SkillRow {
  name: string;
  description: string;
  base_prompt: string;
  owner: string;
  repo: string;
  skill_path: string;
  environment_uid: string;
  environment_name: string;
  last_run: Date | null;
}

/**
 * `GET /agent`: skills found in the caller's environments, shaped as the client libraries expect;
 * `GET /agent/conversations/{id}`: a conversation's runs, advertised skills and ordered actions.
 */
export function createAgentRouter({
  config,
  dataSource,
  secretsKey,
}: {
  config: Config;
  dataSource: DataSource;
  secretsKey: Buffer;
}): Router {
  const router = new Router();

  router.get('/agent', async (ctx) => {
    const query = validate(agentListQuerySchema, ctx.query, 'query');
    const teamId = principalOf(ctx.state).teamId;
    const rows = (await dataSource.query(
      `SELECT s.name, s.description, s.base_prompt, s.owner, s.repo, s.skill_path, e.uid AS environment_uid,
              e.name AS environment_name,
              (SELECT max(r.created_at) FROM runs r WHERE r.team_id = e.team_id
                  AND r.skill_spec = s.owner || '/' || s.repo || ':' || s.skill_path) AS last_run
         FROM environment_skills s JOIN environments e ON e.uid = s.environment_uid
        WHERE e.team_id = $1 AND e.deleted_at IS NULL AND ($2::text IS NULL OR s.owner || '/' || s.repo = $2)
        ORDER BY s.name, s.owner, s.repo, s.skill_path`,
      [teamId, query.repo ?? null],
    )) as SkillRow[];
    const agents = new Map<string, { name: string; variants: Map<string, Record<string, unknown>>; lastRun: number }>();
    for (const row of rows) {
      const agent = agents.get(row.name) ?? { name: row.name, variants: new Map(), lastRun: 0 };
      agents.set(row.name, agent);
      const id = `${row.owner}/${row.repo}:${row.skill_path}`;
      const variant = agent.variants.get(id) ?? {
        id,
        description: row.description,
        base_prompt: row.base_prompt,
        source: { owner: row.owner, name: row.repo, skill_path: row.skill_path },
        environments: [] as { uid: string; name: string }[],
        last_run_timestamp: row.last_run ? row.last_run.toISOString() : null,
      };
      (variant.environments as { uid: string; name: string }[]).push({
        uid: row.environment_uid,
        name: row.environment_name,
      });
      agent.variants.set(id, variant);
      agent.lastRun = Math.max(agent.lastRun, row.last_run?.getTime() ?? 0);
    }
    const list = [...agents.values()];
    if (query.sort_by === 'last_run') list.sort((a, b) => b.lastRun - a.lastRun || a.name.localeCompare(b.name));
    ctx.body = { agents: list.map((a) => ({ name: a.name, variants: [...a.variants.values()] })) };
  });

  router.get('/agent/conversations/:conversationId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const conversationId = ctx.params.conversationId!;
    if (!isUuid(conversationId)) throw notFound(`No conversation ${conversationId}.`);
    const rows = (await dataSource.query(
      `SELECT * FROM runs WHERE conversation_id = $1 AND team_id = $2 ORDER BY created_at, run_id`,
      [conversationId, principalOf(ctx.state).teamId],
    )) as Record<string, unknown>[];
    if (rows.length === 0) throw notFound(`No conversation ${conversationId}.`);
    const runs = rows.map(rowToRun);
    const actions: Record<string, unknown>[] = [];
    const advertised = new Map<string, unknown>();
    for (const [index, run] of runs.entries()) {
      const secrets = runSecretValues(run.config, secretsKey);
      for (const skill of (rows[index]!.advertised_skills as { name: string }[] | null) ?? [])
        advertised.set(skill.name, skill);
      for (const event of maskSecrets(await loadRunEvents(dataSource.manager, run.runId), secrets)) {
        const p = event.payload;
        const base = { run_id: run.runId, created_at: event.createdAt.toISOString() };
        if (event.kind === 'skill_load') actions.push({ ...base, kind: 'read_skill', input: p.input, name: p.name });
        else if (event.kind === 'tool_call' && p.name !== 'read_skill')
          actions.push({
            ...base,
            kind: 'tool_call',
            tool: p.name,
            input: p.input,
            output: p.output,
            is_error: p.is_error,
            exit_code: p.exit_code,
          });
        else if (event.kind === 'assistant')
          actions.push({ ...base, kind: 'agent_message', text: p.text, tool_calls: p.tool_calls ?? [] });
        else if (event.kind === 'prompt') actions.push({ ...base, kind: 'user_message', text: p.text });
        else if (event.kind === 'followup')
          actions.push({ ...base, kind: 'user_message', text: p.message, followup: true });
        else if (event.kind === 'files_changed') actions.push({ ...base, kind: 'files_changed', files: p.files });
      }
      // Recorded, not yet seen by the agent: delivered when the run next steps or continues.
      for (const f of maskSecrets(await pendingFollowups(dataSource.manager, run.runId), secrets)) {
        actions.push({
          run_id: run.runId,
          created_at: f.createdAt.toISOString(),
          kind: 'user_message',
          text: f.message,
          followup: true,
          pending: true,
        });
      }
    }
    const artifacts = await artifactsOfRuns(
      dataSource.manager,
      runs.map((r) => r.runId),
    );
    ctx.body = {
      conversation_id: conversationId,
      runs: runs.map((r) => toRunItem(r, config.publicUrl, secretsKey, artifacts.get(r.runId))),
      advertised_skills: [...advertised.values()],
      actions,
    };
  });

  return router;
}
