import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
/** A private index, so snapshots never touch the index the agent itself uses. */
const SNAPSHOT_INDEX = 'agent-runs-snapshot.index';

export interface GitAuth {
  token?: string;
}

function authEnv(url: string, auth: GitAuth): NodeJS.ProcessEnv {
  if (!auth.token || !/^https?:/i.test(url)) return {};
  // Passed through the environment, never on the command line or in a URL that git may print.
  const basic = Buffer.from(`x-access-token:${auth.token}`).toString('base64');
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}

export function scrubSecret(text: string, secret?: string): string {
  return secret ? text.split(secret).join('***') : text;
}

/**
 * The agent can write the repository's .git/config: the worker's git calls on it get no secrets
 * in their environment and ignore the hooks a config could name.
 */
const SAFE_GIT_ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: '/nonexistent', LANG: 'C.UTF-8' };
const SAFE_GIT_ARGS = ['-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null'];

/** git on a workspace repository (local operations only). */
async function git(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const { stdout } = await execFileAsync('git', [...SAFE_GIT_ARGS, ...args], {
    cwd,
    env: { ...SAFE_GIT_ENV, GIT_TERMINAL_PROMPT: '0', ...env },
    maxBuffer: 256 * 1024 * 1024,
  });
  return stdout;
}

export function repositoryUrl(baseUrl: string, owner: string, repo: string): string {
  return `${baseUrl}/${owner}/${repo}`;
}

export class CloneError extends Error {
  override name = 'CloneError';
}

/** Clones `url` into `dir`; the error names the repository, never the token. */
export async function cloneRepository(url: string, dir: string, auth: GitAuth, signal?: AbortSignal): Promise<void> {
  try {
    await execFileAsync('git', ['clone', '--quiet', url, dir], {
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...authEnv(url, auth) },
      signal,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? (err as Error).message;
    throw new CloneError(scrubSecret(`git clone ${url} failed: ${stderr.trim()}`, auth.token));
  }
}

/** Makes a directory a git repository with one empty commit, so changes in it can be diffed. */
export async function initRepository(dir: string): Promise<void> {
  await git(['init', '--quiet'], dir);
  await git(
    [
      '-c',
      'user.name=agent-runs',
      '-c',
      'user.email=agent-runs@localhost',
      'commit',
      '--quiet',
      '--allow-empty',
      '-m',
      'workspace',
    ],
    dir,
  );
}

/** Git repositories directly in the workspace (and the workspace itself when it is one). */
export function workspaceRepositories(workspace: string): string[] {
  const repos = existsSync(path.join(workspace, '.git')) ? [workspace] : [];
  for (const entry of readdirSync(workspace, { withFileTypes: true })) {
    if (entry.isDirectory() && existsSync(path.join(workspace, entry.name, '.git')))
      repos.push(path.join(workspace, entry.name));
  }
  return repos;
}

/** Unified diff per changed file of a repository against HEAD, untracked files included. */
export async function diffAgainstHead(repo: string): Promise<Map<string, string>> {
  const indexFile = path.join(repo, '.git', SNAPSHOT_INDEX);
  const env = { GIT_INDEX_FILE: indexFile };
  await git(['add', '-A'], repo, env);
  let base = EMPTY_TREE;
  try {
    base = (await git(['rev-parse', '--verify', '--quiet', 'HEAD'], repo)).trim() || EMPTY_TREE;
  } catch {
    base = EMPTY_TREE;
  }
  const diff = await git(['diff', '--cached', '--no-color', '--no-ext-diff', base], repo, env);
  const files = new Map<string, string>();
  for (const part of diff.split(/^(?=diff --git )/m)) {
    const match = /^diff --git a\/(.+?) b\/(.+)$/m.exec(part);
    if (match) files.set(match[2]!, part.trimEnd());
  }
  return files;
}
