/**
 * Git on the worker's host, outside any sandbox, on purpose: the push needs the network to the
 * forge and the credential, and it runs only on a bare staging repository the worker itself
 * created in its temporary directory and filled from a pack (`index-pack --strict`), never on
 * the agent's repository, with no configuration but its own (docs/operations.md, "Pushing runs'
 * branches"). The sandbox layers offer read-only binds only, which image environments drop.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HOST_PATH } from '../sandbox/host-root';
import { authEnv, GIT_TIMEOUT_MS, scrubSecret, type GitAuth } from '../workspace/git';

/** git on the worker's own staging repository: no system, global or home configuration, no hooks, no prompts. */
const STAGING_ENV = {
  PATH: HOST_PATH,
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_ASKPASS: '/bin/false',
  GIT_SSH_COMMAND: '/bin/false',
};
const STAGING_ARGS = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'protocol.allow=never',
  '-c',
  'protocol.https.allow=always',
  '-c',
  'protocol.http.allow=always',
];

export class StagingGitError extends Error {
  override name = 'StagingGitError';
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

function stagingGit(
  gitDir: string,
  args: string[],
  options: { env?: Record<string, string>; stdinFile?: string; secret?: string } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...STAGING_ARGS, `--git-dir=${gitDir}`, ...args],
      { cwd: gitDir, env: { ...STAGING_ENV, ...options.env }, timeout: GIT_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const said = scrubSecret(String(stderr || err.message).trim(), options.secret);
        reject(new StagingGitError(`git ${args[0]} failed: ${said.slice(0, 2000)}`, said));
      },
    );
    if (options.stdinFile) createReadStream(options.stdinFile).pipe(child.stdin!);
    else child.stdin?.end();
  });
}

/**
 * A bare repository of the worker's own, made afresh for one delivery: the only repository git
 * holding the credential ever runs on. The run's commit comes in as a pack (verified by
 * `index-pack`, as any fetched pack is), never by git reading the agent's repository.
 */
export async function withStagingRepository<T>(work: (staging: StagingRepository) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'agent-runs-delivery-'));
  const gitDir = path.join(dir, 'staging.git');
  try {
    await stagingGit(dir, ['init', '--quiet', '--bare', '--template=', gitDir]);
    return await work(stagingRepository(gitDir, path.join(dir, 'commit.pack')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export type StagingRepository = ReturnType<typeof stagingRepository>;

function stagingRepository(gitDir: string, packFile: string) {
  return {
    /** Where the run's pack is written before it is taken in. */
    packFile,
    /** Takes in the pack at `packFile` and checks that it holds `sha`. */
    async importPack(sha: string): Promise<void> {
      await stagingGit(gitDir, ['index-pack', '--stdin', '--strict'], { stdinFile: packFile });
      await stagingGit(gitDir, ['cat-file', '-e', `${sha}^{commit}`]);
    },
    /** The remote's default branch and the commit its `branch` holds (undefined: no such branch). */
    async remoteRefs(
      url: string,
      branch: string,
      auth: GitAuth,
    ): Promise<{ defaultBranch?: string; branchHead?: string }> {
      const out = await stagingGit(gitDir, ['ls-remote', '--symref', url, 'HEAD', `refs/heads/${branch}`], {
        env: authEnv(url, auth),
        secret: auth.token,
      });
      const defaultBranch = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(out)?.[1];
      const line = out.split('\n').find((l) => l.endsWith(`\trefs/heads/${branch}`));
      return { defaultBranch, branchHead: line?.split('\t')[0] };
    },
    /**
     * Pushes `sha` to `branch` only if the branch still holds `expected` (absent: does not exist),
     * so nothing anyone else pushed is ever replaced.
     */
    async push(url: string, sha: string, branch: string, expected: string | undefined, auth: GitAuth): Promise<void> {
      const lease = `--force-with-lease=refs/heads/${branch}:${expected ?? ''}`;
      await stagingGit(gitDir, ['push', '--quiet', '--no-verify', lease, url, `${sha}:refs/heads/${branch}`], {
        env: authEnv(url, auth),
        secret: auth.token,
      });
    },
  };
}
