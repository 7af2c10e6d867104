import { lstat, readlink } from 'node:fs/promises';
import path from 'node:path';

/** Whether `file` (absolute, as the sandbox sees it) exists in `root`: symlinks are followed inside the root, never out of it. */
export async function existsInRoot(root: string, file: string): Promise<boolean> {
  const pending = file.split('/').filter(Boolean);
  const resolved: string[] = [];
  for (let hops = 0; pending.length && hops < 64; hops++) {
    const part = pending.shift()!;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    if (part === '.') continue;
    const host = path.join(root, ...resolved, part);
    const stat = await lstat(host).catch(() => undefined);
    if (!stat) return false;
    if (!stat.isSymbolicLink()) {
      resolved.push(part);
      continue;
    }
    const target = await readlink(host);
    if (target.startsWith('/')) resolved.length = 0;
    pending.unshift(...target.split('/').filter(Boolean));
  }
  return pending.length === 0;
}
