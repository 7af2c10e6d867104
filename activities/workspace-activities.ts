import type { ActivityDeps } from './deps';
import { createProvisionEnvironment } from './workspace/provision-environment';
import { createRemoveWorkspace } from './workspace/remove-workspace-activity';
import { createResolveSkillsAndMcpServers } from './workspace/resolve-skills-and-mcp-servers';
import { workspaceContext } from './workspace/workspace-context';

export { withHeartbeat } from './heartbeat';
export { userFailure } from './user-failure';

/**
 * Workspace activities: provisioning runs on any worker and returns the task queue of the worker
 * that now holds the workspace; everything else that touches the workspace runs there.
 */
export function createWorkspaceActivities(deps: ActivityDeps) {
  const ws = workspaceContext(deps);
  return {
    ...createProvisionEnvironment(deps, ws),
    ...createResolveSkillsAndMcpServers(deps, ws),
    ...createRemoveWorkspace(deps, ws),
  };
}
