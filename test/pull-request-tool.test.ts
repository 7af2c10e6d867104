/**
 * The oz agent's open_pull_request tool against the test run's real Gitea: mid-turn it delivers
 * the run's change as the end of the turn does, the model reads the pull request's URL, and the
 * end of the turn pushes what came after to the same branch and pull request.
 */
import { randomBytes } from 'node:crypto';
import type { SharedGitea } from './stack/on-demand-servers';
import { createEnvironment } from './helpers/environments';
import { createRepository, giteaApi, sharedGitea } from './helpers/gitea';
import { pullFiles, pullsOf, teamWithGitCredential } from './helpers/gitea-delivery';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

jest.setTimeout(600_000);

let ctx: TestContext;
let gitea: SharedGitea;
let host: string;
beforeAll(async () => {
  gitea = await sharedGitea();
  host = new URL(gitea.url).host;
  ctx = await createTestContext({ env: { GIT_BASE_URL: gitea.url, GIT_FORGES: `${host}=gitea` } });
});
afterAll(async () => {
  await ctx?.close();
});

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** A team with Gitea's credential, a new repository and an environment that clones it. */
async function repositoryToChange(prefix: string) {
  const key = await teamWithGitCredential(ctx, gitea, host);
  const repo = await createRepository(gitea, unique(prefix));
  const envId = await createEnvironment(ctx, key, {
    name: prefix,
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  return { key, repo, envId };
}

const write = (file: string) => ({ name: 'write_file', arguments: { path: file, content: `${file}\n` } });

/** The results of the run's open_pull_request calls, as the transcript keeps them. */
async function toolResults(runId: string): Promise<{ output: string; is_error: boolean }[]> {
  return (await transcript(ctx, runId))
    .filter((e) => e.kind === 'tool_call' && e.payload.name === 'open_pull_request')
    .map((e) => e.payload as { output: string; is_error: boolean });
}

test('the agent opens its pull request mid-turn and reads its URL; what it writes afterwards goes to the same pull request at the end of the turn', async () => {
  const { key, repo, envId } = await repositoryToChange('pr-tool');
  const marker = uniqueName('prtool');
  const title = `Add a and b ${marker}`;
  ctx.model.script(marker, (_req, call) => {
    if (call === 1) return { text: '', toolCalls: [write(`${repo.name}/a.txt`)] };
    if (call === 2) {
      const args = { title, body_summary: 'Added a.txt for @alice, see #12.', draft: false };
      return { text: '', toolCalls: [{ name: 'open_pull_request', arguments: args }] };
    }
    if (call === 3) return { text: '', toolCalls: [write(`${repo.name}/b.txt`)] };
    return { text: 'Added a.txt and b.txt.' };
  });
  const runId = await createRun(ctx, key, {
    prompt: `Add files ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);

  const calls = ctx.model.calls(marker);
  expect(calls[0]!.tools).toContain('open_pull_request');
  const pulls = await pullsOf(gitea, repo);
  expect(pulls).toHaveLength(1);
  const pull = pulls[0]!;
  expect(pull).toMatchObject({ title, head: { ref: `agent-runs/${runId}` }, base: { ref: 'main' } });
  expect(pull.html_url.startsWith(gitea.url)).toBe(true);
  // The tool's result, in the transcript and shown to the model, names the pull request.
  const results = await toolResults(runId);
  expect(results).toHaveLength(1);
  expect(results[0]).toMatchObject({ is_error: false });
  expect(results[0]!.output).toBe(
    `${repo.owner}/${repo.name}: pull request #${pull.number} (open) ${pull.html_url} from branch agent-runs/${runId}`,
  );
  expect(calls[2]!.messages.filter((m) => m.role === 'tool').at(-1)!.content).toContain(pull.html_url);
  // The end of the turn pushed b.txt on top, kept the agent's title and quoted its summary, defused.
  expect(await pullFiles(gitea, repo, pull)).toEqual(['a.txt', 'b.txt']);
  expect(pull.body).toContain('Added a.txt for @\u200balice, see #\u200b12.');
  // The tool pushed a commit of a.txt alone, dated by the reply that called it (a retried step
  // makes the same commit); the end of the turn's commit of b.txt is its child.
  const api = (tail: string) => `/repos/${repo.owner}/${repo.name}${tail}`;
  type GiteaCommit = { parents: { sha: string }[]; commit: { author: { date: string } } };
  const head = await giteaApi<GiteaCommit>(gitea, 'GET', api(`/git/commits/${pull.head.sha}`));
  const toolSha = head.parents[0]!.sha;
  const toolCommit = await giteaApi<GiteaCommit>(gitea, 'GET', api(`/git/commits/${toolSha}`));
  const toolFiles = await giteaApi<{ name: string }[]>(gitea, 'GET', api(`/contents?ref=${toolSha}`));
  expect(toolFiles.map((f) => f.name).sort()).toEqual(['README.md', 'a.txt']);
  const [reply] = (await ctx.dataSource.query(
    `SELECT created_at FROM run_events WHERE run_id = $1 AND kind = 'assistant'
        AND payload->'tool_calls'->0->>'name' = 'open_pull_request'`,
    [runId],
  )) as { created_at: Date }[];
  expect(Date.parse(toolCommit.commit.author.date) / 1000).toBe(Math.floor(reply!.created_at.getTime() / 1000));
  expect(
    await ctx.dataSource.query(`SELECT count(*)::int AS n FROM run_pull_requests WHERE run_id = $1`, [runId]),
  ).toEqual([{ n: 1 }]);
});

test('without config.delivery.pull_request the tool is not offered, and a call of it is an error result that changes nothing', async () => {
  const { key, repo, envId } = await repositoryToChange('pr-tool-off');
  const marker = uniqueName('prtooloff');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return { text: '', toolCalls: [write(`${repo.name}/x.txt`), { name: 'open_pull_request', arguments: {} }] };
    return { text: 'Done.' };
  });
  const runId = await createRun(ctx, key, { prompt: `Write ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(ctx.model.calls(marker)[0]!.tools).not.toContain('open_pull_request');
  expect(ctx.model.calls(marker)[0]!.tools).toContain('write_file');
  const results = await toolResults(runId);
  expect(results).toEqual([
    expect.objectContaining({ is_error: true, output: expect.stringMatching(/not available/) as unknown }),
  ]);
  expect(await pullsOf(gitea, repo)).toEqual([]);
});

test('in plan mode the tool is not offered, even where the run delivers pull requests', async () => {
  const { key, envId } = await repositoryToChange('pr-tool-plan');
  const marker = uniqueName('prtoolplan');
  ctx.model.script(marker, () => ({ text: '# Plan\n\n1. Do it.' }));
  const runId = await createRun(ctx, key, {
    prompt: `Plan ${marker}`,
    mode: 'plan',
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(ctx.model.calls(marker)[0]!.tools).toContain('read_file');
  expect(ctx.model.calls(marker)[0]!.tools).not.toContain('open_pull_request');
});

test('config.approval gates open_pull_request by name: nothing is delivered until a person approves', async () => {
  const { key, repo, envId } = await repositoryToChange('pr-tool-gate');
  const marker = uniqueName('prtoolgate');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1) return { text: '', toolCalls: [write(`${repo.name}/g.txt`)] };
    if (call === 2)
      return { text: '', toolCalls: [{ name: 'open_pull_request', arguments: { title: `Gated ${marker}` } }] };
    return { text: 'Opened it.' };
  });
  const runId = await createRun(ctx, key, {
    prompt: `Write ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} }, approval: { tools: ['open_pull_request'] } },
  });
  const run = await waitForState(ctx, key, runId, ['BLOCKED']);
  const pending = run.pending_approval as { approval_id: string; tool: string };
  expect(pending.tool).toBe('open_pull_request');
  expect(await pullsOf(gitea, repo)).toEqual([]);
  const approved = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/approvals/${pending.approval_id}`)
    .set(auth(key))
    .send({ decision: 'approve' });
  expect(approved.status).toBe(200);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const pulls = await pullsOf(gitea, repo);
  expect(pulls).toHaveLength(1);
  expect(pulls[0]!.title).toBe(`Gated ${marker}`);
  expect((await toolResults(runId))[0]!.output).toContain(pulls[0]!.html_url);
});
