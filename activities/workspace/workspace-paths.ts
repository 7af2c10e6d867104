import path from 'node:path';

/** A run's workspace on the worker's host. */
export function workspaceDir(root: string, runId: string): string {
  return path.join(root, runId);
}
