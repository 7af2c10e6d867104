import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../core/logger';
import { replaceHandoffAttachments } from '../../db/attachments';
import { type FileContent } from '../../db/attachment-reads';
import { appendRunEvent } from '../../db/run-events';
import type { ActivityDeps } from '../deps';
import { runProcesses } from '../sandbox/sandboxed-process';
import { patchAgainst, workspaceRepositories } from '../workspace/git';
import { baseCommitsFile } from '../workspace/workspace-paths';
import { isRegularFile } from './regular-file';

/** The largest handoff patch stored per repository; a larger one is left out with a notice. */
const MAX_HANDOFF_PATCH_BYTES = 32 * 1024 * 1024;

export function createRecordHandoff({ dataSource, config, sandbox, blobs }: ActivityDeps) {
  return recordHandoff;

  /**
   * At the end of a turn: one patch per repository of everything that differs from the commit the
   * workspace started from (git in the sandbox, `.gitignore` respected), stored as the turn's
   * handoff files (`workspace.patch` for the workspace itself, `<repo>.patch` for a clone). A
   * failure here is logged and noted, never the end of the run.
   */
  async function recordHandoff(
    log: Logger,
    runId: string,
    turn: number,
    workspace: string,
    signal: AbortSignal,
  ): Promise<void> {
    const processes = runProcesses(sandbox, runId);
    let bases: Record<string, string> = {};
    try {
      bases = JSON.parse(readFileSync(baseCommitsFile(config.workspace.dir, runId), 'utf8')) as Record<string, string>;
    } catch {
      // Provisioned before base commits were recorded: each repository's HEAD stands in.
    }
    const files: FileContent[] = [];
    const skipped: string[] = [];
    for (const repo of workspaceRepositories(workspace)) {
      const fileName = repo === '' ? 'workspace.patch' : `${repo}.patch`;
      try {
        const patch = await patchAgainst(processes, repo, bases[repo], signal, {
          hasGitignore: isRegularFile(path.join(workspace, repo, '.gitignore')),
          maxBytes: MAX_HANDOFF_PATCH_BYTES,
        });
        if (patch) files.push({ fileName, mimeType: 'text/x-diff', bytes: Buffer.from(patch, 'utf8') });
      } catch (err) {
        if (signal.aborted) throw err;
        skipped.push(`${repo || '.'}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    await replaceHandoffAttachments(dataSource, blobs, runId, turn, files);
    if (skipped.length) {
      log.warn('handoff patch left out', { skipped });
      await dataSource.transaction((tx) =>
        appendRunEvent(tx, {
          runId,
          eventKey: `handoff-t${turn}`,
          kind: 'notice',
          turn,
          payload: {
            message: `The handoff patch leaves out repositories git could not diff (the limit is ${MAX_HANDOFF_PATCH_BYTES} bytes per patch): ${skipped.join('; ')}`,
            level: 'warning',
          },
        }),
      );
    }
  }
}
