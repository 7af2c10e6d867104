import { ATTACHMENTS_DIR } from '../../core/attachments';
import { loadRunAttachments } from '../../db/attachment-reads';
import type { ActivityDeps } from '../deps';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { workspaceFiles } from '../sandbox/workspace-files';

export function createWriteAttachments({ dataSource, blobs }: ActivityDeps) {
  return writeAttachments;

  /**
   * Writes the run's attachments into `attachments/` of the workspace, through the sandbox like
   * every file the run sees; a workspace that is itself a repository leaves them out of its diffs.
   */
  async function writeAttachments(runId: string, processes: RunProcesses, repos: string[]) {
    const attachments = await loadRunAttachments(dataSource.manager, blobs, runId);
    if (!attachments.length) return;
    const files = workspaceFiles(processes);
    for (const a of attachments) await files.writeBytes(`${ATTACHMENTS_DIR}/${a.fileName}`, a.bytes);
    if (repos.includes('')) {
      const exclude = '.git/info/exclude';
      const current = await files.read(exclude).catch(() => '');
      if (!current.split('\n').includes(`/${ATTACHMENTS_DIR}/`)) {
        await files.write(exclude, `${current}${current && !current.endsWith('\n') ? '\n' : ''}/${ATTACHMENTS_DIR}/\n`);
      }
    }
  }
}
