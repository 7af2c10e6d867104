import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A directory that serves repositories as `file://<root>/<owner>/<repo>` (the GIT_BASE_URL of a test). */
export function createGitHost(): {
  baseUrl: string;
  root: string;
  addRepo(owner: string, repo: string, files: Record<string, string>): void;
} {
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-git-'));
  // Clones run in the sandbox as its own uid: the mirror must be readable by others, as a real one is.
  chmodSync(root, 0o755);
  return {
    root,
    baseUrl: `file://${root}`,
    addRepo(owner, repo, files) {
      const dir = path.join(root, owner, repo);
      mkdirSync(dir, { recursive: true });
      const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
      git('init', '--quiet', '--initial-branch=main');
      for (const [file, content] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        writeFileSync(path.join(dir, file), content);
      }
      git('add', '-A');
      git('-c', 'user.name=fixture', '-c', 'user.email=fixture@localhost', 'commit', '--quiet', '-m', 'fixture');
    },
  };
}
