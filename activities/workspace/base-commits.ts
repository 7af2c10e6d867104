import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { resolveCommit } from './git';
import type { WorkspaceContext } from './workspace-context';
import { baseCommitsFile } from './workspace-paths';

export function createRecordBaseCommits({ root }: Pick<WorkspaceContext, 'root'>) {
  return recordBaseCommits;

  /** Records the commit every repository of the fresh workspace starts from (the handoff patch's base). */
  async function recordBaseCommits(runId: string, processes: RunProcesses, repos: string[]) {
    const commits: Record<string, string> = {};
    for (const repo of repos) {
      const commit = await resolveCommit(processes, repo, 'HEAD');
      if (commit) commits[repo] = commit;
    }
    const file = baseCommitsFile(root, runId);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify(commits));
  }
}
