import { chmod, chown, lchown, lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * A run's workspace and private state beside it (`runDir`: home, tmp, sockets, env), made
 * traversable but not listable, and owned by the sandbox's host uid when there is one.
 */
export async function makeRunDirs(workspace: string, dir: string, uid: number | undefined): Promise<void> {
  await mkdir(workspace, { recursive: true });
  for (const sub of ['home', 'tmp', 'sockets', 'env']) await mkdir(path.join(dir, sub), { recursive: true });
  // Traversable but not listable: the sandboxed uid reaches only what it is given by name.
  await chmod(dir, 0o711);
  await chmod(path.join(dir, 'sockets'), 0o711);
  await chmod(path.join(dir, 'env'), 0o711);
  if (uid === undefined) return;
  for (const sub of ['home', 'tmp']) {
    await chown(path.join(dir, sub), uid, uid);
    await chmod(path.join(dir, sub), 0o700);
  }
  // Workspaces made before the sandbox (or by an older worker) change hands once, recursively.
  if ((await lstat(workspace)).uid !== uid) await chownTree(workspace, uid);
  await chmod(workspace, 0o700);
}

/** chown without following symlinks, through a whole tree. */
async function chownTree(root: string, uid: number): Promise<void> {
  const stack = [root];
  while (stack.length) {
    const current = stack.pop()!;
    await lchown(current, uid, uid);
    const stat = await lstat(current);
    if (!stat.isDirectory()) continue;
    for (const entry of await readdir(current)) stack.push(path.join(current, entry));
  }
}
