import { lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { CLONE_GITCONFIG } from '../sandbox/sandbox-etc';
import { ExecError, type ExecOptions, type RunProcesses } from '../sandbox/sandboxed-process';

const CLONE_GITCONFIG_PATH = `/etc/${CLONE_GITCONFIG}`;

const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
/** A private index, so snapshots never touch the index the agent itself uses. */
/** The private index of the diff step in each repository's .git: a cache, left out of checkpoints. */
export const SNAPSHOT_INDEX = 'agent-runs-snapshot.index';

export interface GitAuth {
  token?: string;
  /** The Basic user name the token goes with (default `x-access-token`, which every forge ignores). */
  username?: string;
}

export function authEnv(url: string, auth: GitAuth): Record<string, string> {
  if (!auth.token || !/^https?:/i.test(url)) return {};
  // Passed through the environment, never on the command line or in a URL that git may print.
  const basic = Buffer.from(`${auth.username ?? 'x-access-token'}:${auth.token}`).toString('base64');
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
 * Git inside the run's sandbox reads no system or global configuration and ignores the hooks and
 * fsmonitor a repository's own config could name: the agent can write that config.
 */
export const SAFE_GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' };
const SAFE_GIT_ARGS = ['-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null'];

/**
 * How long one git call in the workspace may take: a repository's own config can name filters
 * that git runs, and the run controls that config.
 */
export const GIT_TIMEOUT_MS = 120_000;

/** `value` as one word of a POSIX shell command. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** git on a workspace repository (local operations only), in the run's sandbox. */
function git(
  processes: RunProcesses,
  args: string[],
  repo: string,
  options: { env?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<string> {
  return processes.exec(['git', ...SAFE_GIT_ARGS, ...args], {
    cwd: repo,
    env: { ...SAFE_GIT_ENV, ...options.env },
    maxBuffer: 256 * 1024 * 1024,
    timeoutMs: GIT_TIMEOUT_MS,
    signal: options.signal,
  });
}

export function repositoryUrl(baseUrl: string, owner: string, repo: string): string {
  return `${baseUrl}/${owner}/${repo}`;
}

export class CloneError extends Error {
  override name = 'CloneError';
}

/** Clones `url` into `dir` (relative to the workspace); the error names the repository, never the token. */
export async function cloneRepository(
  processes: RunProcesses,
  url: string,
  dir: string,
  auth: GitAuth,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await processes.exec(['git', 'clone', '--quiet', '--template=', url, dir], {
      ...remoteGitOptions(url, auth),
      signal,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    const stderr = err instanceof ExecError ? err.stderr || err.message : (err as Error).message;
    throw new CloneError(scrubSecret(`git clone ${url} failed: ${stderr.trim()}`, auth.token));
  }
}

/**
 * The commit a remote repository's HEAD names (what a clone would check out), asked in the same
 * kind of sandbox as a clone; undefined when the remote cannot say.
 */
export async function remoteHead(
  processes: RunProcesses,
  url: string,
  auth: GitAuth,
  signal?: AbortSignal,
): Promise<string | undefined> {
  try {
    const out = await processes.exec(['git', 'ls-remote', '--quiet', url, 'HEAD'], {
      ...remoteGitOptions(url, auth),
      signal,
      timeoutMs: GIT_TIMEOUT_MS,
    });
    return /^([0-9a-f]{40,64})\tHEAD$/m.exec(out)?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Git that talks to the git host carries the platform's token, so it runs in a sandbox of its
 * own: the host network (the git host may be private), no home, no configuration the run could
 * have written.
 */
function remoteGitOptions(url: string, auth: GitAuth): ExecOptions {
  // A file:// source is the operator's own mirror: shown read-only, trusted whoever owns it.
  const local = /^file:\/\//i.test(url) ? decodeURIComponent(new URL(url).pathname) : undefined;
  return {
    env: { ...SAFE_GIT_ENV, ...(local ? { GIT_CONFIG_GLOBAL: CLONE_GITCONFIG_PATH } : {}), ...authEnv(url, auth) },
    network: 'host',
    homeless: true,
    readonlyBinds: local ? [local] : undefined,
  };
}

/** Makes a workspace directory a git repository with one empty commit, so changes in it can be diffed. */
export async function initRepository(processes: RunProcesses, dir = ''): Promise<void> {
  const git = ['git', ...SAFE_GIT_ARGS].map(shellQuote).join(' ');
  const identity = ['-c', 'user.name=agent-runs', '-c', 'user.email=agent-runs@localhost'].map(shellQuote).join(' ');
  // One sandboxed process for both calls: starting one is most of what they cost.
  await processes.exec(
    ['sh', '-c', `${git} init --quiet && exec ${git} ${identity} commit --quiet --allow-empty -m workspace`],
    {
      cwd: dir,
      env: SAFE_GIT_ENV,
      timeoutMs: 2 * GIT_TIMEOUT_MS,
    },
  );
}

/**
 * Git repositories directly in the workspace (and the workspace itself when it is one), as
 * paths relative to it ('' for the root). Symlinks are not followed: a repository is a real
 * directory with a real `.git`.
 */
export function workspaceRepositories(workspace: string): string[] {
  const isRepo = (dir: string) => {
    try {
      const git = lstatSync(path.join(dir, '.git'));
      return git.isDirectory() || git.isFile();
    } catch {
      return false;
    }
  };
  const repos = isRepo(workspace) ? [''] : [];
  for (const entry of readdirSync(workspace, { withFileTypes: true })) {
    if (entry.isDirectory() && isRepo(path.join(workspace, entry.name))) repos.push(entry.name);
  }
  return repos;
}

/**
 * Dependency and cache directories that a repository without a .gitignore would otherwise put
 * into every diff after `npm install` or `pip install`.
 */
const DEPENDENCY_DIRS = [
  'node_modules',
  '.venv',
  'venv',
  '__pycache__',
  '.tox',
  '.mypy_cache',
  '.pytest_cache',
  '.gradle',
  '.next',
  '.cache',
  'target',
];

/** The commit `rev` names in `repo`, or undefined when it names none (an unborn HEAD, a commit the agent removed). */
export async function resolveCommit(
  processes: RunProcesses,
  repo: string,
  rev: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  try {
    return (
      (await git(processes, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`], repo, { signal })).trim() ||
      undefined
    );
  } catch {
    return undefined;
  }
}

/**
 * Shell words that stage everything of `repo` (untracked too) in the private snapshot index,
 * never the agent's own: `.gitignore` respected, else the well-known dependency directories left out.
 */
export function snapshotStage(processes: RunProcesses, repo: string, hasGitignore: boolean | undefined) {
  const index = shellQuote(path.posix.join(processes.workspacePath, repo, '.git', SNAPSHOT_INDEX));
  const git = ['git', ...SAFE_GIT_ARGS].map(shellQuote).join(' ');
  const exclude = hasGitignore ? [] : DEPENDENCY_DIRS.map((d) => `:(exclude,glob)**/${d}/**`);
  const stage = `GIT_INDEX_FILE=${index} ${git} add -A -- . ${exclude.map(shellQuote).join(' ')} || exit $?`;
  return { index, git, stage };
}

/**
 * A script for `sh -c script sh <base>` that stages everything of `repo` (untracked too) in the
 * private snapshot index, compares it with the commit `<base>` names (else HEAD, else the empty
 * tree), and prints `git diff --cached <diffArgs>`: one sandboxed process for the git calls, as
 * starting a process is most of what they cost. Without `withBase`, against HEAD: `diff --cached`
 * takes HEAD, or the empty tree on an unborn branch, itself, which saves a git call per step.
 * `.gitignore` is respected; without one the well-known dependency directories are left out.
 */
function snapshotDiffScript(
  processes: RunProcesses,
  repo: string,
  hasGitignore: boolean | undefined,
  diffArgs: string[],
  withBase: boolean,
): string {
  const { index, git, stage } = snapshotStage(processes, repo, hasGitignore);
  const diff = `GIT_INDEX_FILE=${index} exec ${git} diff --cached ${diffArgs.map(shellQuote).join(' ')}`;
  if (!withBase) return [stage, diff].join('\n');
  return [
    stage,
    'from=',
    `[ -z "$1" ] || from=$(${git} rev-parse --verify --quiet "$1^{commit}") || from=`,
    `[ -n "$from" ] || from=$(${git} rev-parse --verify --quiet 'HEAD^{commit}') || from=${EMPTY_TREE}`,
    `${diff} "$from"`,
  ].join('\n');
}

/**
 * Unified diff per changed file of a repository against HEAD, untracked files included;
 * `.gitignore` is respected, and without one the well-known dependency directories are left out.
 * Runs after every step: one sandboxed process (snapshotDiffScript).
 */
export async function diffAgainstHead(
  processes: RunProcesses,
  repo: string,
  signal?: AbortSignal,
  options: { hasGitignore?: boolean } = {},
): Promise<Map<string, string>> {
  const script = snapshotDiffScript(
    processes,
    repo,
    options.hasGitignore,
    ['--no-color', '--no-ext-diff', '--no-textconv'],
    false,
  );
  const diff = await processes.exec(['sh', '-c', script, 'sh'], {
    cwd: repo,
    env: SAFE_GIT_ENV,
    maxBuffer: 256 * 1024 * 1024,
    // The git calls' budgets as when each was a process of its own (three, before HEAD was left to the diff).
    timeoutMs: 3 * GIT_TIMEOUT_MS,
    signal,
  });
  const files = new Map<string, string>();
  for (const part of diff.split(/^(?=diff --git )/m)) {
    const match = /^diff --git a\/(.+?) b\/(.+)$/m.exec(part);
    if (match) files.set(match[2]!, part.trimEnd());
  }
  return files;
}

/**
 * One patch (`git apply`-able, binary files included) of everything that differs in `repo` from
 * the commit `base`: committed since, staged, unstaged and untracked, under the same ignore
 * rules as diffAgainstHead. Empty when nothing changed.
 */
export async function patchAgainst(
  processes: RunProcesses,
  repo: string,
  base: string | undefined,
  signal?: AbortSignal,
  options: { hasGitignore?: boolean; maxBytes?: number } = {},
): Promise<string> {
  const script = snapshotDiffScript(
    processes,
    repo,
    options.hasGitignore,
    ['--binary', '--full-index', '--no-color', '--no-ext-diff', '--no-textconv'],
    true,
  );
  return processes.exec(['sh', '-c', script, 'sh', base ?? ''], {
    cwd: repo,
    env: SAFE_GIT_ENV,
    maxBuffer: options.maxBytes ?? 256 * 1024 * 1024,
    timeoutMs: 4 * GIT_TIMEOUT_MS,
    signal,
  });
}
