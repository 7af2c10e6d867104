import path from 'node:path';

/** A run's workspace on the worker's host. */
export function workspaceDir(root: string, runId: string): string {
  return path.join(root, runId);
}

/**
 * The commit each repository of a run's workspace started from (`{ "<repo>": "<sha>" }`, '' for
 * the workspace itself), written when it is provisioned. Kept beside the workspaces, not in
 * them, so the agent can neither see nor move it; the handoff patch is made against it.
 */
export function baseCommitsFile(root: string, runId: string): string {
  return path.join(root, '.base-commits', `${runId}.json`);
}

/** Marks a finished provisioning; holds the workspace's id. Beside the workspaces, out of the agent's reach. */
export function provisionedMarker(root: string, runId: string): string {
  return path.join(root, '.provisioned', runId);
}

/** Which provisioning owns the run's directory, written before it starts building it. */
export function workspaceIdFile(root: string, runId: string): string {
  return path.join(root, '.workspace-ids', runId);
}

/** The run's workspace lock (activities/workspace/workspace-lock.ts): beside the workspaces. */
export function workspaceLockFile(root: string, runId: string): string {
  return path.join(root, '.workspace-locks', runId);
}

/** Where the approval hooks of CLI invocations are written (each bound read-only into its own sandbox only). */
export function harnessHooksDir(root: string): string {
  return path.join(root, '.harness-hooks');
}

/** Where the model gateway's per-invocation sockets are made (each bound into its own sandbox only). */
export function gatewaySocketDir(root: string): string {
  return path.join(root, '.gateway');
}

/**
 * A run's private state beside its workspace (home, tmp, sockets, environment files): what the
 * sandbox shows the run of it is only by name. With disk limits, the run's filesystem is mounted
 * here and holds the workspace too (activities/sandbox/run-disks.ts).
 */
export function runStateDir(root: string, runId: string): string {
  return path.join(root, '.sandbox', runId);
}

/**
 * Where a run's harness CLIs write their standard output, a file per invocation, kept until its
 * entries are recorded: in the run's state, within its disk limit, out of the agent's reach.
 */
export function harnessOutputDir(root: string, runId: string): string {
  return path.join(runStateDir(root, runId), 'harness-output');
}

/** Where harness output was kept before it moved into the run's state (read once for runs from then). */
export function legacyHarnessOutputDir(root: string, runId: string): string {
  return path.join(root, '.harness-output', runId);
}
