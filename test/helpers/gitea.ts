import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SharedGitea } from '../stack/on-demand-servers';
import { testStack } from './test-context';

const run = promisify(execFile);

let shared: Promise<SharedGitea> | undefined;

/** The test run's Gitea (started by the stack on the first file's request, test/stack/on-demand-servers.ts). */
export function sharedGitea(): Promise<SharedGitea> {
  shared ??= (async () => {
    // The first request may wait for Gitea's build (minutes on a fresh machine) and its start.
    const response = await fetch(`${testStack().onDemand}/gitea`, {
      method: 'POST',
      signal: AbortSignal.timeout(2_700_000),
    });
    if (!response.ok) throw new Error(`the test run's Gitea did not start: ${await response.text()}`);
    return (await response.json()) as SharedGitea;
  })();
  return shared;
}

/** A call to Gitea's API v1 as its administrator; throws on an error status. */
export async function giteaApi<T>(gitea: SharedGitea, method: string, apiPath: string, body?: unknown): Promise<T> {
  const response = await fetch(`${gitea.url}/api/v1${apiPath}`, {
    method,
    headers: { authorization: `token ${gitea.token}`, 'content-type': 'application/json', accept: 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`Gitea ${method} ${apiPath} answered ${response.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A new repository of the administrator's with one commit on `main`. */
export async function createRepository(gitea: SharedGitea, name: string): Promise<{ owner: string; name: string }> {
  await giteaApi(gitea, 'POST', '/user/repos', { name, auto_init: true, default_branch: 'main', readme: 'Default' });
  return { owner: gitea.username, name };
}

/**
 * Pushes `branch` (from `main`, with one new file) to the repository with git over HTTP (to
 * `options.to` instead where given), the token in a header through git's environment (never in a
 * URL). A refused push rejects with git's `stderr`.
 */
export async function pushBranch(
  gitea: SharedGitea,
  repository: { owner: string; name: string },
  branch: string,
  file: { name: string; content: string },
  options: { token?: string; to?: string } = {},
): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gitea-push-'));
  const basic = Buffer.from(`${gitea.username}:${options.token ?? gitea.token}`).toString('base64');
  const env = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 'test@example.test',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 'test@example.test',
  };
  const git = (...args: string[]) => run('git', args, { cwd: dir, env });
  // Cloned anonymously (the repositories are public): a bad token fails the push, not the clone.
  await run('git', ['clone', '--quiet', `${gitea.url}/${repository.owner}/${repository.name}.git`, dir]);
  await git('checkout', '--quiet', '-B', branch, 'origin/main');
  await writeFile(path.join(dir, file.name), file.content);
  await git('add', file.name);
  await git('commit', '--quiet', '-m', `Add ${file.name}`);
  await git('push', '--quiet', 'origin', `HEAD:refs/heads/${options.to ?? branch}`);
}
