import { isGitOwnerAllowed } from '../../core/git-owners';
import { appendRunEvent } from '../../db/run-events';
import type { RunImage } from '../../db/run-images';
import { loadProvisionedRun, type ProvisionedRun } from '../../db/run-step-reads';
import type { ActivityDeps } from '../deps';
import { userFailure } from '../user-failure';
import { provisionedMarker as provisionedMarkerOf, workspaceIdFile as workspaceIdFileOf } from './workspace-paths';
import { workspaceRootOf } from './workspace-root';

/** What the workspace activities share: where workspaces are, the git credentials, and their checks and notices. */
export function workspaceContext({ dataSource, config }: ActivityDeps) {
  const root = config.workspace.dir;
  const workerId = config.worker.id;
  const workspaceRoot = workspaceRootOf(config.workspace.dir);
  const auth = { token: config.workspace.gitToken };
  const provisionedMarker = (runId: string) => provisionedMarkerOf(root, runId);
  const workspaceIdFile = (runId: string) => workspaceIdFileOf(root, runId);

  function assertOwnerAllowed(owner: string, what: string) {
    if (isGitOwnerAllowed(config.workspace.gitAllowedOwners, owner)) return;
    throw userFailure(
      `${what} is not allowed: this service's GIT_ALLOWED_OWNERS does not include ${owner}.`,
      'not_authorized',
    );
  }

  async function loadRun(runId: string): Promise<ProvisionedRun> {
    return (await loadProvisionedRun(dataSource.manager, runId))!;
  }

  /** A notice on the run's transcript and timeline; a workspace's names the image it runs on. */
  async function note(runId: string, turn: number, key: string, message: string, image?: RunImage) {
    const payload = image ? { message, image_reference: image.reference, image_digest: image.digest } : { message };
    await dataSource.transaction((tx) => appendRunEvent(tx, { runId, eventKey: key, kind: 'notice', turn, payload }));
  }

  return { root, workerId, workspaceRoot, auth, provisionedMarker, workspaceIdFile, assertOwnerAllowed, loadRun, note };
}

export type WorkspaceContext = ReturnType<typeof workspaceContext>;
