import path from 'node:path';

/** What /proc/self/mountinfo and /proc/self/cgroup say: where the hierarchies are, and this process's groups. */

export interface Mount {
  /** The mount's root within its hierarchy (not `/` inside a container with its own cgroup namespace). */
  root: string;
  mountPoint: string;
  type: 'cgroup' | 'cgroup2';
  controllers: string[];
}

export function parseMounts(mountinfo: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [type, , superOptions] = right.split(' ');
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    mounts.push({
      root: unescapeMountPath(fields[3]!),
      mountPoint: unescapeMountPath(fields[4]!),
      type,
      controllers: type === 'cgroup' ? (superOptions ?? '').split(',') : [],
    });
  }
  return mounts;
}

/** mountinfo writes spaces and other bytes as octal escapes (`\040`). */
function unescapeMountPath(value: string): string {
  return value.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** `/proc/self/cgroup`: hierarchy id, its controllers (empty for v2), and this process's path in it. */
export function parseSelfCgroup(text: string): { controllers: string[]; path: string }[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [, controllers, ...rest] = line.split(':');
      return { controllers: controllers ? controllers.split(',') : [], path: rest.join(':') };
    });
}

/** The directory of this process's group in a mount, as the mount shows it. */
export function ownDir(mount: Mount, ownPath: string): string | undefined {
  const relative = path.posix.relative(mount.root, ownPath);
  if (relative.startsWith('..')) return undefined; // the group is outside what this mount shows
  return path.join(mount.mountPoint, relative);
}
