import { createWriteStream } from 'node:fs';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { GIT_TIMEOUT_MS, SAFE_GIT_ENV, snapshotStage } from '../workspace/git';

export interface CommitRequest {
  /** The commit last pushed to the run's branch, if any: the new one goes on from it when it can. */
  previous: string | undefined;
  author: { name: string; email: string };
  /** Seconds since the epoch: the turn's end as the workflow recorded it, so a retry makes the same commit. */
  date: number;
  message: string;
  hasGitignore: boolean;
}

/**
 * The commit of the repository's working tree as the diff step snapshots it (its private index,
 * never the agent's; branches untouched: `commit-tree` only writes an object), in the run's
 * sandbox: no network, no credential. Its parent is the commit last pushed when the agent's HEAD
 * is part of it (a follow-up's change goes on top), else HEAD (the agent's own commits kept).
 * When the tree is the parent's, the parent itself: nothing new to commit.
 */
export async function makeDeliveryCommit(
  processes: RunProcesses,
  repo: string,
  request: CommitRequest,
): Promise<string> {
  const { git, index, stage } = snapshotStage(processes, repo, request.hasGitignore);
  const script = [
    stage,
    `tree=$(GIT_INDEX_FILE=${index} ${git} write-tree) || exit $?`,
    `head=$(${git} rev-parse --verify --quiet 'HEAD^{commit}') || head=`,
    'parent=$head',
    `if [ -n "$1" ] && ${git} cat-file -e "$1^{commit}" 2>/dev/null && { [ -z "$head" ] || ${git} merge-base --is-ancestor "$head" "$1"; }; then parent=$1; fi`,
    `if [ -n "$parent" ] && [ "$(${git} rev-parse "$parent^{tree}")" = "$tree" ]; then echo "$parent"; exit 0; fi`,
    'export GIT_AUTHOR_NAME="$2" GIT_AUTHOR_EMAIL="$3" GIT_AUTHOR_DATE="$4 +0000"',
    'export GIT_COMMITTER_NAME="$2" GIT_COMMITTER_EMAIL="$3" GIT_COMMITTER_DATE="$4 +0000"',
    `exec ${git} commit-tree "$tree" \${parent:+-p "$parent"} -m "$5"`,
  ].join('\n');
  const { previous, author, date, message } = request;
  const out = await processes.exec(
    ['sh', '-c', script, 'sh', previous ?? '', author.name, author.email, `@${date}`, message],
    { cwd: repo, env: SAFE_GIT_ENV, timeoutMs: 4 * GIT_TIMEOUT_MS, maxBuffer: 1024 * 1024 },
  );
  const sha = out.trim();
  if (!/^[0-9a-f]{40,64}$/.test(sha)) throw new Error(`git did not name the commit it made (${sha.slice(0, 200)})`);
  return sha;
}

/** Every object the commit reaches, as one pack written to `file` (a file the worker owns), by git in the run's sandbox. */
export async function packCommit(processes: RunProcesses, repo: string, sha: string, file: string): Promise<void> {
  await processes.exec(['git', '-c', 'core.fsmonitor=false', 'pack-objects', '--revs', '--stdout', '--quiet'], {
    cwd: repo,
    env: SAFE_GIT_ENV,
    input: `${sha}\n`,
    output: createWriteStream(file),
    timeoutMs: 4 * GIT_TIMEOUT_MS,
  });
}
