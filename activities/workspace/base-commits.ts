import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { recordRunBaseCommits } from '../../db/checkpoints';
import { runBaseCommits } from '../../db/checkpoint-reads';
import type { ActivityDeps } from '../deps';
import { resolveCommit } from './git';
import type { WorkspaceContext } from './workspace-context';
import { baseCommitsFile } from './workspace-paths';

export function createRecordBaseCommits({ root }: Pick<WorkspaceContext, 'root'>, { dataSource }: ActivityDeps) {
  return { recordBaseCommits, restoreBaseCommits };

  /**
   * Records the commit every repository of the fresh workspace starts from (the handoff patch's
   * base), beside the workspace and with the run, where a workspace made again from a
   * checkpoint finds them.
   */
  async function recordBaseCommits(runId: string, processes: RunProcesses, repos: string[]) {
    const commits: Record<string, string> = {};
    for (const repo of repos) {
      const commit = await resolveCommit(processes, repo, 'HEAD');
      if (commit) commits[repo] = commit;
    }
    await recordRunBaseCommits(dataSource.manager, runId, commits);
    await writeCommits(runId, commits);
  }

  /** The base commits of a run whose workspace was made again from a checkpoint, as its first one recorded them. */
  async function restoreBaseCommits(runId: string) {
    await writeCommits(runId, (await runBaseCommits(dataSource.manager, runId)) ?? {});
  }

  async function writeCommits(runId: string, commits: Record<string, string>) {
    const file = baseCommitsFile(root, runId);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify(commits));
  }
}
