import { createHash } from 'node:crypto';
import path from 'node:path';
import { HOST_PATH } from '../sandbox/host-root';
import { execTool, ToolMissingError, type ToolSandbox } from '../sandbox/tool-sandbox';
import { ImagePullError, classifySkopeoError } from './image-pull-error';

/** How skopeo reaches one registry: TLS or not, and the credential file (never the worker's own). */
export interface RegistryAccess {
  insecure: boolean;
  /** A file in containers-auth.json format (inside isolatedHome); an empty one when the team has no credential. */
  authFile: string;
  /** HOME and XDG_RUNTIME_DIR of skopeo: an empty private directory, so no credential of the worker's is found. */
  isolatedHome: string;
  /** The sandbox skopeo runs in. */
  tools: ToolSandbox;
}

const INDEX_TYPES = new Set([
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]);

interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  platform?: { os?: string; architecture?: string; variant?: string };
}
interface Manifest {
  mediaType?: string;
  manifests?: Descriptor[];
  config?: Descriptor;
  layers?: Descriptor[];
}

/** The image a tag or digest names, for this machine: the digest callers record, and its download size. */
export interface ResolvedImage {
  /** Digest of what the reference names (an index for multi-platform images), as `docker pull` prints it. */
  digest: string;
  /** Bytes to download: config and layers of this platform's image. */
  downloadBytes: number;
  /** `linux/amd64` */
  platform: string;
}

const GOARCH: Partial<Record<NodeJS.Architecture, string>> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  s390x: 's390x',
  ppc64: 'ppc64le',
};

export function platformArch(): string {
  return GOARCH[process.arch] ?? process.arch;
}

/**
 * skopeo runs in a tool sandbox (activities/sandbox/tool-sandbox.ts): the host network, its
 * private HOME (with the team's auth file) and `writable` (the pull's staging directory) and
 * nothing else of the host; as IMAGE_TOOLS_UID when the worker is root. The registry host has
 * been checked (`ImageStore`).
 */
function run(
  args: string[],
  access: RegistryAccess,
  options: {
    signal?: AbortSignal;
    timeoutMs: number;
    onStdoutLine?: (line: string) => void;
    writable?: string;
  },
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let tool;
    try {
      tool = access.tools.wrap(['skopeo', ...args], {
        network: 'host',
        writable: [access.isolatedHome, ...(options.writable ? [options.writable] : [])],
        env: {
          PATH: HOST_PATH,
          HOME: access.isolatedHome,
          XDG_RUNTIME_DIR: access.isolatedHome,
          ...proxyVariables(),
        },
      });
    } catch (err) {
      if (!(err instanceof ToolMissingError)) throw err;
      return reject(
        new ImagePullError(
          'unsupported',
          'this worker cannot pull images: skopeo is not installed on it (an operator installs skopeo and umoci)',
        ),
      );
    }
    const child = execTool(
      tool,
      { maxBuffer: 16 * 1024 * 1024, timeoutMs: options.timeoutMs, signal: options.signal, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const text = stderr.toString('utf8').trim() || err.message;
        const problem = classifySkopeoError(text);
        reject(problem ? new ImagePullError(problem, text) : new Error(`skopeo ${args[0]}: ${text}`));
      },
    );
    if (options.onStdoutLine) {
      let pending = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) if (line.trim()) options.onStdoutLine!(line.trim());
      });
    }
  });
}

/** The worker's own proxy settings, which a registry may need to be reached. */
function proxyVariables(): Record<string, string> {
  const names = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];
  return Object.fromEntries(names.flatMap((n) => (process.env[n] ? [[n, process.env[n]!]] : [])));
}

function tlsFlag(flag: string, access: RegistryAccess): string {
  return `${flag}=${access.insecure ? 'false' : 'true'}`;
}

async function rawManifest(
  location: string,
  access: RegistryAccess,
  options: { signal?: AbortSignal; timeoutMs: number },
): Promise<{ raw: Buffer; manifest: Manifest }> {
  const raw = await run(
    [
      'inspect',
      '--raw',
      '--retry-times=2',
      tlsFlag('--tls-verify', access),
      `--authfile=${access.authFile}`,
      `docker://${location}`,
    ],
    access,
    options,
  );
  try {
    return { raw, manifest: JSON.parse(raw.toString('utf8')) as Manifest };
  } catch {
    throw new ImagePullError('unsupported', `the registry answered ${location} with a manifest that is not JSON`);
  }
}

/**
 * Resolves `repository:tag` (or `@digest`) to the digest the registry serves now, and picks this
 * machine's image of a multi-platform index to size the download.
 */
export async function resolveImage(
  location: string,
  repository: string,
  access: RegistryAccess,
  options: { signal?: AbortSignal; timeoutMs: number },
): Promise<ResolvedImage> {
  const top = await rawManifest(location, access, options);
  const digest = `sha256:${createHash('sha256').update(top.raw).digest('hex')}`;
  const asked = location.includes('@') ? location.slice(location.indexOf('@') + 1) : undefined;
  if (asked && asked !== digest) {
    throw new Error(`the registry answered ${location} with a manifest whose digest is ${digest}`);
  }
  const arch = platformArch();
  let manifest = top.manifest;
  const mediaType = manifest.mediaType ?? (manifest.manifests ? 'application/vnd.oci.image.index.v1+json' : undefined);
  if (mediaType && INDEX_TYPES.has(mediaType)) {
    const entry = (manifest.manifests ?? []).find(
      (m) => m.platform?.os === 'linux' && m.platform.architecture === arch,
    );
    if (!entry) {
      const offered = (manifest.manifests ?? []).map((m) => `${m.platform?.os}/${m.platform?.architecture}`).join(', ');
      throw new ImagePullError(
        'unsupported',
        `${location} has no linux/${arch} image (it offers ${offered || 'none'})`,
      );
    }
    manifest = (await rawManifest(`${repository}@${entry.digest}`, access, options)).manifest;
  }
  if (!manifest.layers || !manifest.config) {
    throw new ImagePullError('unsupported', `${location} is not a container image (its manifest has no layers)`);
  }
  const downloadBytes = manifest.config.size + manifest.layers.reduce((sum, l) => sum + l.size, 0);
  return { digest, downloadBytes, platform: `linux/${arch}` };
}

/** Copies the image `repository@digest` into an OCI layout (skopeo checks every blob's digest as it copies). */
export async function copyToLayout(
  repository: string,
  digest: string,
  layoutDir: string,
  access: RegistryAccess,
  options: { signal?: AbortSignal; timeoutMs: number; onProgress: (line: string) => void },
): Promise<void> {
  await run(
    [
      'copy',
      '--retry-times=2',
      tlsFlag('--src-tls-verify', access),
      `--src-authfile=${access.authFile}`,
      `--override-os=linux`,
      `--override-arch=${platformArch()}`,
      `docker://${repository}@${digest}`,
      `oci:${layoutDir}:image`,
    ],
    access,
    {
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      onStdoutLine: options.onProgress,
      writable: path.dirname(layoutDir),
    },
  );
}
