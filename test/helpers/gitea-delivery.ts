import type { SharedGitea } from '../stack/on-demand-servers';
import { giteaApi } from './gitea';
import { auth } from './runs';
import { uniqueName, type TestContext } from './test-context';

/** A pull request as Gitea's API shows it. */
export interface GiteaPull {
  number: number;
  title: string;
  body: string;
  html_url: string;
  head: { ref: string; sha: string };
  base: { ref: string };
}

/** Every pull request of the repository, open or not. */
export function pullsOf(gitea: SharedGitea, repo: { owner: string; name: string }): Promise<GiteaPull[]> {
  return giteaApi<GiteaPull[]>(gitea, 'GET', `/repos/${repo.owner}/${repo.name}/pulls?state=all`);
}

/** The files a pull request changes. */
export async function pullFiles(
  gitea: SharedGitea,
  repo: { owner: string; name: string },
  pull: { number: number },
): Promise<string[]> {
  const files = await giteaApi<{ filename: string }[]>(
    gitea,
    'GET',
    `/repos/${repo.owner}/${repo.name}/pulls/${pull.number}/files`,
  );
  return files.map((f) => f.filename).sort();
}

/** A new team's admin key, the team holding a `git_credentials` secret for Gitea as the service reaches it at `host`. */
export async function teamWithGitCredential(ctx: TestContext, gitea: SharedGitea, host: string): Promise<string> {
  const { key } = await ctx.newTeamKey('personal', uniqueName('team'), 'admin');
  const res = await ctx.api
    .post('/api/v1/agent/secrets')
    .set(auth(key))
    .send({ name: 'gitea', kind: 'git_credentials', value: `${gitea.username}:${gitea.token}@${host}` });
  if (res.status !== 201) throw new Error(`storing the git credential answered ${res.status}: ${res.text}`);
  return key;
}
