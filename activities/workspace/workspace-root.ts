import os from 'node:os';
import path from 'node:path';

/** `host:directory` of a worker's workspaces: two workers with this in common share their disk. */
export function workspaceRootOf(dir: string): string {
  return `${os.hostname()}:${path.resolve(dir)}`;
}
