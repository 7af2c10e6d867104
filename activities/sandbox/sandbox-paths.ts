/** Where things are inside every sandbox. */
export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_HOME = '/home/agent';
export const SANDBOX_PROXY_SOCKET = '/run/agent-runs/proxy.sock';
export const SANDBOX_GATEWAY_SOCKET = '/run/agent-runs/gateway.sock';
/** sandbox-init: the first program of every sandboxed process (limits, network bridge, then the command). */
export const SANDBOX_INIT = '/run/agent-runs/init';
/** The process's environment as a file sandbox-init reads (`NAME=value`, NUL-separated). */
export const SANDBOX_ENV = '/run/agent-runs/env';

/**
 * What the sandbox mounts over on an image's root filesystem. The root is mounted read-only, so
 * bubblewrap cannot make these there: they are made once, in the image cache's copy.
 */
export const IMAGE_MOUNT_POINTS = {
  dirs: ['/proc', '/dev', '/tmp', SANDBOX_WORKSPACE, SANDBOX_HOME, '/run/agent-runs', '/etc'],
  files: [
    '/etc/passwd',
    '/etc/group',
    '/etc/hosts',
    '/etc/hostname',
    SANDBOX_INIT,
    SANDBOX_ENV,
    SANDBOX_PROXY_SOCKET,
    SANDBOX_GATEWAY_SOCKET,
  ],
};
