import type { SandboxConfig } from '../../core/config';

/** The file sandbox-init's `-env` reads: `NAME=value` entries separated by NUL (no value holds one). */
export function sandboxEnvironmentFile(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([name, value]) => `${name}=${value}`)
    .join('\0');
}

/** sandbox-init's `-limits`: each process's own limits, soft and hard alike (open files never above the worker's hard limit). */
export function limitsSpec(limits: SandboxConfig['limits']): string {
  const mib = 1024 * 1024;
  return [
    'core=0',
    `nproc=${limits.maxProcesses}`,
    `data=${limits.memoryMb * mib}`,
    `fsize=${limits.maxFileSizeMb * mib}`,
    `cpu=${limits.cpuSeconds}`,
    `nofile=${limits.maxOpenFiles}`,
  ].join(',');
}
