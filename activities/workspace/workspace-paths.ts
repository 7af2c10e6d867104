import { lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';

export function workspaceDir(root: string, runId: string): string {
  return path.join(root, runId);
}

export class PathOutsideWorkspaceError extends Error {
  override name = 'PathOutsideWorkspaceError';
}

/**
 * Resolves a path the agent gave (relative to the workspace, or absolute inside it) and refuses
 * anything that lands outside the workspace, including through symlinks.
 */
export function resolveInWorkspace(workspace: string, requested: string): string {
  const root = realpathSync(workspace);
  const target = path.resolve(root, requested || '.');
  const inside = (p: string) => p === root || p.startsWith(root + path.sep);
  if (!inside(target)) throw new PathOutsideWorkspaceError(`${requested} is outside the workspace`);
  // The deepest existing ancestor decides where a symlink really points; a dangling symlink is
  // refused outright, since writing through it could create a file anywhere.
  let existing = target;
  for (;;) {
    let real: string | undefined;
    try {
      real = realpathSync(existing);
    } catch {
      if (isSymlink(existing)) throw new PathOutsideWorkspaceError(`${requested} goes through a dangling symlink`);
    }
    if (real !== undefined) {
      if (!inside(real)) throw new PathOutsideWorkspaceError(`${requested} leads outside the workspace`);
      break;
    }
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  return target;
}

function isSymlink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The environment agent commands run with: enough to work, none of the worker's secrets. */
export function commandEnvironment(workspace: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: workspace,
    LANG: process.env.LANG ?? 'C.UTF-8',
    TERM: 'dumb',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_TERMINAL_PROMPT: '0',
    CI: 'true',
  };
}
