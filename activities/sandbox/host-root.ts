import { existsSync, lstatSync, readlinkSync } from 'node:fs';

/** The only environment of the host-side launchers (setpriv, bwrap, the cgroup join). */
export const HOST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** System directories a sandbox on the host's root sees read-only. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Just the parts of /etc that programs need to run; nothing with host secrets or host identity. */
export const ETC_FILES = [
  'alternatives',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'mime.types',
  'nsswitch.conf',
  'bash.bashrc',
  'profile',
  'inputrc',
  'protocols',
  'services',
];

/** Name resolution, for sandboxes on the host network (the platform's git clones, image pulls). */
export const HOST_NETWORK_ETC = ['resolv.conf', 'hosts', 'host.conf', 'gai.conf'];

/** The host's system directories as bwrap arguments (symlinks, as on merged-/usr systems, stay symlinks). */
export function systemDirArgs(): string[] {
  return SYSTEM_DIRS.filter((d) => existsSync(d)).flatMap((d) =>
    lstatSync(d).isSymbolicLink() ? ['--symlink', readlinkSync(d), d] : ['--ro-bind', d, d],
  );
}

/** `/etc` entries as read-only bwrap binds, each only where the host has it. */
export function etcArgs(names: readonly string[]): string[] {
  return names.flatMap((name) => ['--ro-bind-try', `/etc/${name}`, `/etc/${name}`]);
}
