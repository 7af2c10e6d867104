import { readFile } from 'node:fs/promises';
import type { ActivityDeps } from '../deps';
import { removeRunWorkspace } from './remove-workspace';
import type { WorkspaceContext } from './workspace-context';
import { withWorkspaceLock } from './workspace-lock';

export function createRemoveWorkspace(
  { sandbox, mcpSessions }: ActivityDeps,
  { root, workspaceIdFile }: Pick<WorkspaceContext, 'root' | 'workspaceIdFile'>,
) {
  return {
    /**
     * Removes the run's workspace from this worker (idle window over, or cancelled). With
     * `workspaceId`, only that workspace: a run provisioned again on this worker (even one being
     * provisioned right now) keeps its new one. Says whether it removed anything.
     */
    async removeWorkspace({ runId, workspaceId }: { runId: string; workspaceId?: string }): Promise<boolean> {
      return withWorkspaceLock(root, runId, async () => {
        if (workspaceId !== undefined) {
          const current = await readFile(workspaceIdFile(runId), 'utf8').catch(() => undefined);
          if (current !== undefined && current !== workspaceId) return false;
        }
        await removeRunWorkspace({ root, sandbox, mcpSessions }, runId);
        return true;
      });
    },
  };
}
