import { createHash } from 'node:crypto';
import path from 'node:path';
import type { RunEventPayloads } from '../../core/run-events';
import { appendRunEvent } from '../../db/run-events';
import { latestDiffDigests } from '../../db/run-event-reads';
import { withSpan } from '../../core/spans';
import type { ActivityDeps } from '../deps';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { diffAgainstHead, workspaceRepositories } from '../workspace/git';
import { isRegularFile } from './regular-file';
import { createCheckpointStep } from '../checkpoints/checkpoint-step';

const MAX_DIFF_BYTES_PER_FILE = 256 * 1024;
const MAX_DIFF_BYTES_PER_STEP = 2 * 1024 * 1024;

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

/** A diff cut at `limit` bytes, with a marker saying how much was left out. */
function capDiff(diff: string, limit: number): string {
  const bytes = Buffer.byteLength(diff, 'utf8');
  if (bytes <= limit) return diff;
  const head = Buffer.from(diff, 'utf8').subarray(0, limit).toString('utf8');
  return `${head}\n[... diff cut: ${bytes - limit} more bytes of this file's diff are not shown ...]`;
}

export function createRecordChangedFiles(deps: ActivityDeps) {
  const { dataSource } = deps;
  const checkpointStep = createCheckpointStep(deps);
  /**
   * Records the files this step changed, per repository, as unified diffs from git (in a
   * `record_changed_files` span), then the run's files as they are now in its checkpoint.
   */
  return async (...args: Parameters<typeof recordChangedFiles>) => {
    await withSpan('record_changed_files', {}, () => recordChangedFiles(...args));
    const [runId, turn, step] = args;
    await withSpan('checkpoint', {}, () => checkpointStep(runId, turn, step + 1));
  };

  async function recordChangedFiles(
    runId: string,
    turn: number,
    step: number,
    workspace: string,
    processes: RunProcesses,
    signal: AbortSignal,
  ): Promise<void> {
    // Digests, not diffs: what a step reads stays small however long the run.
    const previous = await latestDiffDigests(dataSource.manager, runId);
    const changed: RunEventPayloads['files_changed']['files'] = [];
    let stepBytes = 0;
    const current = new Set<string>();
    for (const repo of workspaceRepositories(workspace)) {
      const repoName = repo === '' ? '.' : repo;
      let diffs: Map<string, string>;
      try {
        diffs = await diffAgainstHead(processes, repo, signal, {
          hasGitignore: isRegularFile(path.join(workspace, repo, '.gitignore')),
        });
      } catch (err) {
        if (signal.aborted) throw err;
        // A repository the agent broke, pointed elsewhere or gave a filter that outlasts the git
        // timeout has no diff to show this step; what it showed before stands.
        for (const key of previous.keys()) if (key.startsWith(`${repoName}\0`)) current.add(key);
        continue;
      }
      for (const [file, fullDiff] of diffs) {
        const key = `${repoName}\0${file}`;
        current.add(key);
        // Capped per file and per step, with a marker; the digest is that of the text recorded.
        let diff = capDiff(fullDiff, MAX_DIFF_BYTES_PER_FILE);
        if (previous.get(key) === md5(diff)) continue;
        if (stepBytes + diff.length > MAX_DIFF_BYTES_PER_STEP)
          diff = `[diff omitted: this step's diffs exceed ${MAX_DIFF_BYTES_PER_STEP} bytes]`;
        stepBytes += diff.length;
        changed.push({ repo: repoName, path: file, diff });
      }
    }
    for (const key of previous.keys()) {
      if (!current.has(key)) {
        const [repo, file] = key.split('\0') as [string, string];
        changed.push({ repo, path: file, diff: '' });
      }
    }
    if (!changed.length) return;
    await dataSource.transaction((tx) =>
      appendRunEvent(tx, {
        runId,
        eventKey: `files-t${turn}-s${step}`,
        kind: 'files_changed',
        turn,
        payload: { files: changed },
      }),
    );
  }
}
