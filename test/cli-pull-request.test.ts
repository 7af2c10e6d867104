/**
 * What a CI job does to get a pull request, in one command, against the test run's real Gitea:
 * `agent-runs run … --env … --pr --wait` prints the run's id, then each pull request's URL,
 * one a line on stdout, and exits 0; with a failed delivery it exits 3 saying what to do.
 */
import { createEnvironment } from './helpers/environments';
import { startCli } from './helpers/cli-process';
import { createRepository, sharedGitea } from './helpers/gitea';
import { pullsOf, teamWithGitCredential } from './helpers/gitea-delivery';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import type { SharedGitea } from './stack/on-demand-servers';

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

const as = (key: string) => ({ AGENT_RUNS_URL: ctx.baseUrl, AGENT_RUNS_API_KEY: key });

/** The agent writes `file` in the repository, then answers. */
function scriptWrite(marker: string, file: string) {
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: `echo ci > ${file}` } }] }
      : { text: `Wrote ${file}.` },
  );
}

test('run --pr --wait prints the run id, then the pull request URL, and exits 0', async () => {
  const key = await teamWithGitCredential(ctx, gitea, host);
  const repo = await createRepository(gitea, uniqueName('cli-pr'));
  const envId = await createEnvironment(ctx, key, {
    name: 'cli pr',
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const marker = uniqueName('clipr');
  scriptWrite(marker, `${repo.name}/ci.txt`);

  const result = await startCli(['run', `Write ${marker}`, '--env', envId, '--pr', '--wait'], as(key)).done;
  expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 });
  const [runId, ...urls] = result.stdout.trim().split('\n');
  const pulls = await pullsOf(gitea, repo);
  expect(pulls).toHaveLength(1);
  expect(pulls[0]!.head.ref).toBe(`agent-runs/${runId}`);
  expect(urls).toContain(pulls[0]!.html_url);
  expect(result.stderr).toContain(`Pull request (open) on agent-runs/${runId}: ${pulls[0]!.html_url}`);
});

test('run --pr --wait exits 3 naming the missing credential when the team has none', async () => {
  const { key } = await ctx.newTeamKey();
  const repo = await createRepository(gitea, uniqueName('cli-nopr'));
  const envId = await createEnvironment(ctx, key, {
    name: 'cli no credential',
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const marker = uniqueName('clinopr');
  scriptWrite(marker, `${repo.name}/ci.txt`);

  const result = await startCli(['run', `Write ${marker}`, '--env', envId, '--pr', '--wait'], as(key)).done;
  expect(result.code).toBe(3);
  expect(result.stderr).toMatch(/git_credentials/);
  expect(await pullsOf(gitea, repo)).toEqual([]);
});
