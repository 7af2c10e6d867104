import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { findWorkspaceHolder, recordWorkspaceHolder } from '../../db/run-workspaces';
import type { ActivityDeps } from '../deps';
import type { WorkspaceContext } from './workspace-context';
import { withWorkspaceLock } from './workspace-lock';
import { workspaceDir } from './workspace-paths';

/** What a provisioning asks of the run's directory on this worker. */
export interface WorkspaceClaim {
  runId: string;
  turn: number;
  /** Why the workflow provisions again: the worker that held the workspace is gone. */
  reason?: string;
  /** The workspace the workflow gave up (its removal may not have run yet): never kept. */
  discarded?: string;
}

/** `kept`: the workspace on this worker carries on; otherwise a new one, empty, to build. */
export type ClaimedWorkspace = { kept: boolean; workspaceId: string };

/**
 * Whose the run's directory on this worker is: the workspace already there, kept (or taken
 * back by the worker that held it), or a new one that owns it from now on. Under the run's
 * workspace lock, so a removal of the workspace the workflow gave up happens wholly before (and
 * this builds afresh) or wholly after (and finds a new id, so removes nothing).
 */
export function createClaimWorkspace(deps: ActivityDeps, ws: WorkspaceContext) {
  const { dataSource, workspaceQueue, sandbox } = deps;
  const { root, workerId, workspaceRoot, provisionedMarker, workspaceIdFile, note } = ws;

  async function owned(runId: string, workspaceId: string): Promise<void> {
    await recordWorkspaceHolder(dataSource.manager, runId, { workerId, workspaceQueue, workspaceId, workspaceRoot });
  }

  async function claim({ runId, turn, reason, discarded }: WorkspaceClaim): Promise<ClaimedWorkspace> {
    const ctx = Context.current();
    const kept = existsSync(provisionedMarker(runId)) && existsSync(workspaceDir(root, runId));
    const localId = kept ? await readFile(provisionedMarker(runId), 'utf8') : undefined;
    if (!reason && localId !== undefined && localId !== discarded) return { kept: true, workspaceId: localId };
    if (reason) {
      // Given up because its worker stopped renewing its lease. When that worker is this one,
      // back with the workspace it kept, and no other worker has taken the run over, it
      // carries on there; otherwise the run starts afresh here.
      const holder = await findWorkspaceHolder(dataSource.manager, runId);
      if (holder?.workspaceQueue === workspaceQueue && holder.workspaceId === localId) {
        // A new id: the removal the workflow left for the abandoned workspace names the old one.
        const workspaceId = randomUUID();
        await writeFile(workspaceIdFile(runId), workspaceId);
        await writeFile(provisionedMarker(runId), workspaceId);
        await owned(runId, workspaceId);
        await note(
          runId,
          turn,
          `reattach-t${turn}-${ctx.info.activityId}`,
          `The worker that held the workspace (${workerId}) came back before any other worker took the run over: the run carries on in the same workspace.`,
        );
        return { kept: true, workspaceId };
      }
      await note(
        runId,
        turn,
        `reprovision-t${turn}-${ctx.info.activityId}`,
        `${reason} The new workspace is on worker ${workerId}.`,
      );
    }
    const workspaceId = randomUUID();
    await rm(provisionedMarker(runId), { force: true });
    await mkdir(path.dirname(workspaceIdFile(runId)), { recursive: true });
    // Recorded before the work: from now on every worker's sweep knows whose it is.
    await owned(runId, workspaceId);
    await writeFile(workspaceIdFile(runId), workspaceId);
    await sandbox.destroyRun(runId);
    await sandbox.prepareRun(runId);
    return { kept: false, workspaceId };
  }

  return (request: WorkspaceClaim) => withWorkspaceLock(root, request.runId, () => claim(request));
}
