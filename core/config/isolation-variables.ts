import { z } from 'zod';
import { group, intFrom, optionalString } from './variable';

/** How a run's processes are confined on a worker, and how much they may use. */
export const sandbox = group('Sandbox and limits', {
  AGENT_SANDBOX: {
    schema: z.enum(['bwrap', 'none']).default('bwrap'),
    description: '`bwrap`: every process of a run is sandboxed; `none`: unconfined, for a single trusted user only',
    readBy: ['workers'],
  },
  AGENT_SANDBOX_BWRAP_PATH: {
    schema: optionalString,
    description: 'bubblewrap binary',
    readBy: ['workers'],
    unset: '`bwrap` on `PATH`',
  },
  AGENT_SANDBOX_INIT_PATH: {
    schema: optionalString,
    description:
      'the static `sandbox-init` binary every sandboxed process starts with (limits, network bridge); the container image sets it',
    readBy: ['workers'],
    unset: 'built once with Go from `activities/sandbox/sandbox-init` into the cache',
  },
  AGENT_SANDBOX_UID: {
    schema: intFrom(200_000, 1000, 4_000_000_000),
    description: 'host uid of sandboxed processes when the worker runs as root',
    readBy: ['workers'],
  },
  IMAGE_TOOLS_UID: {
    schema: intFrom(200_001, 1000, 4_000_000_000),
    description:
      "host uid skopeo and umoci run as, each in a sandbox of its own, when the worker runs as root (they pull and unpack environments' images); must differ from AGENT_SANDBOX_UID",
    readBy: ['workers'],
  },
  AGENT_SANDBOX_READONLY_PATHS: {
    schema: optionalString,
    description: 'comma-separated host paths shown read-only in every sandbox, for toolchains outside `/usr`',
    readBy: ['workers'],
    unset: 'unset',
  },
  AGENT_SANDBOX_MEMORY_MB: {
    schema: intFrom(4096, 64, 1_048_576),
    description: "memory of one run's processes together (its cgroup), and each process's data segment",
    readBy: ['workers'],
  },
  AGENT_SANDBOX_MAX_PROCESSES: {
    schema: intFrom(512, 8, 1_000_000),
    description: "processes of one run together, in its cgroup; also each process's own limit",
    readBy: ['workers'],
  },
  AGENT_SANDBOX_MAX_FILE_SIZE_MB: {
    schema: intFrom(2048, 1, 1_048_576),
    description: 'largest file a command may write',
    readBy: ['workers'],
  },
  AGENT_SANDBOX_CPU_SECONDS: {
    schema: intFrom(3600, 1, 1_000_000),
    description: 'CPU time per process of a command',
    readBy: ['workers'],
  },
  AGENT_SANDBOX_MAX_OPEN_FILES: {
    schema: intFrom(4096, 64, 1_048_576),
    description: "open files per process, never above the worker's own hard limit",
    readBy: ['workers'],
  },
  AGENT_SANDBOX_CPUS: {
    schema: z.coerce.number().min(0).max(1024).default(0),
    description: 'CPUs one run may use at most; 0: an equal share with the other runs, no cap',
    readBy: ['workers'],
  },
  AGENT_RUN_LIMITS: {
    schema: z.enum(['enforce', 'off']).default('enforce'),
    description:
      "`enforce`: each run's processes share a cgroup with the memory, process and CPU limits; a worker that cannot refuses to start. `off`: per-process limits only, logged as a warning and shown by `/readyz`",
    readBy: ['workers'],
  },
  AGENT_WORKSPACE_MAX_BYTES: {
    schema: z.coerce
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .default(10 * 1024 ** 3),
    description:
      "bytes a run's files (workspace, home, tmp) may take on disk; a write past it fails in the run (`ENOSPC`) and the run ends `FAILED` with `budget_exceeded`; 0 = no limit",
    readBy: ['workers'],
  },
  AGENT_DISK_LIMITS: {
    schema: z.enum(['enforce', 'measure']).default('enforce'),
    description:
      "`enforce`: each run's files live on a filesystem of their own of `AGENT_WORKSPACE_MAX_BYTES` (a loop-mounted ext4 image), so a write past the limit fails in the run; a worker that cannot (not root, no loop devices, no `mkfs.ext4`) refuses to start. `measure`: the files are measured while commands run and after each step, so a fast writer can pass the limit before it is stopped; logged as a warning and shown by `/readyz`",
    readBy: ['workers'],
  },
});

/** What runs, MCP servers and webhooks may connect to. */
export const network = group('Network', {
  AGENT_NETWORK_DEFAULT: {
    schema: z.string().default('open'),
    description:
      'network policy of environments without `network`, and of runs without an environment: `open`, `none`, or a comma list of domains like `github.com,*.npmjs.org`',
    readBy: ['workers'],
  },
  AGENT_NETWORK_ALLOWED_PRIVATE_HOSTS: {
    schema: optionalString,
    description:
      "private hosts, `host:port` or CIDRs the sandboxes' proxy may reach (in-house mirrors); the platform's own services stay refused",
    readBy: ['workers'],
    unset: 'unset',
  },
  EGRESS_CIDRS: {
    schema: optionalString,
    description:
      "comma-separated IPv4 and IPv6 networks (`203.0.113.0/24`, `2001:db8::/48`, or single addresses) that runs' traffic leaves from, as `GET /networking/egress-ranges` tells callers who allowlist it",
    readBy: ['API'],
    unset: 'unset: an empty list (not known)',
  },
  OUTBOUND_ALLOWED_PRIVATE_HOSTS: {
    schema: optionalString,
    description:
      "private hosts, `host:port` or CIDRs the workers may connect to for MCP `url` servers and webhooks (the API checks webhook URLs against it too); the platform's own services stay refused",
    readBy: ['API', 'workers'],
    unset: 'unset',
  },
});
