import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { mib, seconds } from '../../core/human-units';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../core/config';
import { isRegistryAllowed, type ImageReference } from '../../core/image-reference';
import type { OutboundAddressRules } from '../../core/outbound-addresses';
import type { RegistryCredential } from '../../core/registry-credentials';
import { hexOf, ImageCache, type CachedImage } from './image-cache';
import type { ToolSandbox } from '../sandbox/tool-sandbox';
import { ImagePullError } from './image-pull-error';
import { SnapshotStore } from './snapshot-store';
import { copyToLayout, resolveImage, type RegistryAccess } from './skopeo';
import { unpackImage } from './unpack-image';

/** What one run asks for: the environment's image, and the digest an earlier provisioning of the run recorded. */
export interface ImageRequest {
  runId: string;
  /** As the environment wrote it (for messages). */
  text: string;
  image: ImageReference;
  pinnedDigest?: string;
  credential?: RegistryCredential;
  signal?: AbortSignal;
  /** Progress for the run's timeline and the activity's heartbeat. */
  onProgress(message: string): void;
}

export interface ImageUse {
  image: CachedImage;
  /** Whether the unpacked image was already here. */
  cached: boolean;
  pullMs?: number;
  unpackMs?: number;
  /** Images removed to make room, least recently used first. */
  evicted: string[];
}

/**
 * Environments' images on this worker: resolves a reference to its digest with the team's
 * credential (every time, so a cached private image is never used without it), pulls each digest
 * once (coalesced within the worker, locked across the workers of the machine), unpacks it, and
 * keeps it under IMAGE_CACHE_MAX_BYTES.
 */
export class ImageStore {
  private readonly cache: ImageCache;
  private readonly inflight = new Map<string, Promise<{ image: CachedImage; pullMs: number; unpackMs: number }>>();
  private opened: Promise<void> | undefined;
  /** Environments' setup snapshots, kept in the same cache. */
  readonly snapshots: SnapshotStore;

  constructor(
    private readonly config: Config['images'],
    private readonly allowedRegistries: readonly string[],
    private readonly rules: OutboundAddressRules,
    /** skopeo's and umoci's sandbox; undefined where there is no sandbox (AGENT_SANDBOX=none), and no image is pulled. */
    private readonly tools: ToolSandbox | undefined,
  ) {
    // A worker waits for another's pull of the same digest as long as such a pull may take.
    this.cache = new ImageCache(config.cacheDir, config.pullTimeoutSeconds * 2 + 60);
    this.snapshots = new SnapshotStore(this.cache, () => this.open(), config);
  }

  private open(): Promise<void> {
    this.opened ??= this.cache.open().catch((err: unknown) => {
      this.opened = undefined;
      throw err;
    });
    return this.opened;
  }

  /** Drops the run's hold on its image (its workspace is gone). */
  async release(runId: string): Promise<void> {
    await this.open();
    await this.cache.release(runId);
  }

  /** The runs holding an image of this machine's cache (any of its workers' runs). */
  async leaseHolders(): Promise<string[]> {
    await this.open();
    return this.cache.leaseHolders();
  }

  async use(request: ImageRequest): Promise<ImageUse> {
    const { tools } = this;
    if (!tools) throw new ImagePullError('unsupported', 'images need the sandbox, and this worker has none');
    await this.open();
    const { image } = request;
    await this.assertRegistryReachable(image.registry);
    const repository = `${image.registry}/${image.repository}`;
    const digestWanted = request.pinnedDigest ?? image.digest;
    const location = digestWanted ? `${repository}@${digestWanted}` : `${repository}:${image.tag ?? 'latest'}`;
    const home = await mkdtemp(path.join(os.tmpdir(), 'agent-runs-skopeo-'));
    try {
      const access = await this.access(image.registry, home, request.credential, tools);
      const timeoutMs = this.config.pullTimeoutSeconds * 1000;
      const resolved = await resolveImage(location, repository, access, { signal: request.signal, timeoutMs });
      if (resolved.downloadBytes > this.config.cacheMaxBytes) {
        throw new ImagePullError(
          'too_large',
          `${request.text} is ${mib(resolved.downloadBytes)} to download, more than the image cache holds (IMAGE_CACHE_MAX_BYTES, ${mib(this.config.cacheMaxBytes)})`,
        );
      }
      const { digest } = resolved;
      const hex = hexOf(digest);
      // Leased before it is looked for: an eviction that runs meanwhile sees the lease.
      await this.cache.lease(digest, request.runId);
      let pull = this.inflight.get(hex);
      if (pull) {
        request.onProgress(`Waiting for this worker's pull of ${digest}, which another run started.`);
      } else {
        const found = await this.cache.withLock(hex, () => this.cache.find(digest));
        if (found) {
          await this.cache.touch(digest);
          return { image: found, cached: true, evicted: [] };
        }
        // Looked for again: another run of this worker may have started the pull meanwhile.
        pull = this.inflight.get(hex);
        if (!pull) {
          request.onProgress(
            `Pulling ${request.text} (${digest}, ${resolved.platform}, ${mib(resolved.downloadBytes)} to download).`,
          );
          pull = this.pull(repository, resolved, access, request).finally(() => this.inflight.delete(hex));
          this.inflight.set(hex, pull);
        } else {
          request.onProgress(`Waiting for this worker's pull of ${digest}, which another run started.`);
        }
      }
      const pulled = await pull;
      await this.cache.touch(digest);
      const evicted = await this.cache.evict(this.config.cacheMaxBytes);
      return { image: pulled.image, cached: false, pullMs: pulled.pullMs, unpackMs: pulled.unpackMs, evicted };
    } catch (err) {
      await this.cache.release(request.runId).catch(() => undefined);
      throw err;
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  private pull(
    repository: string,
    resolved: { digest: string; downloadBytes: number; platform: string },
    access: RegistryAccess,
    request: ImageRequest,
  ): Promise<{ image: CachedImage; pullMs: number; unpackMs: number }> {
    const { digest } = resolved;
    return this.cache.withLock(hexOf(digest), async () => {
      // Another worker of this machine may have pulled it while this one waited for the lock.
      const found = await this.cache.find(digest);
      if (found) return { image: found, pullMs: 0, unpackMs: 0 };
      // The worker's directory; the tools write only `work` in it (unpack-image.ts says why).
      const stage = await this.cache.stage(digest);
      try {
        const work = await this.cache.toolDirectory(stage, access.tools.uid);
        const timeoutMs = this.config.pullTimeoutSeconds * 1000;
        const started = Date.now();
        let blobs = 0;
        await copyToLayout(repository, digest, path.join(work, 'layout'), access, {
          signal: request.signal,
          timeoutMs,
          onProgress: (line) => {
            if (line.startsWith('Copying blob')) blobs += 1;
          },
        });
        const pullMs = Date.now() - started;
        request.onProgress(`Downloaded ${digest}: ${blobs} layer${blobs === 1 ? '' : 's'} in ${seconds(pullMs)}.`);
        const unpackStarted = Date.now();
        const processConfig = await unpackImage(work, stage, {
          signal: request.signal,
          timeoutMs,
          maxBytes: this.config.cacheMaxBytes,
          what: request.text,
          tools: access.tools,
        });
        await rm(work, { recursive: true, force: true });
        const unpackedBytes = await this.cache.diskUsage(path.join(stage, 'rootfs'));
        if (unpackedBytes > this.config.cacheMaxBytes) {
          throw new ImagePullError(
            'too_large',
            `${request.text} takes ${mib(unpackedBytes)} unpacked, more than the image cache holds (IMAGE_CACHE_MAX_BYTES, ${mib(this.config.cacheMaxBytes)})`,
          );
        }
        const image = await this.cache.commit(digest, stage, {
          ...processConfig,
          digest,
          downloadBytes: resolved.downloadBytes,
          platform: resolved.platform,
        });
        return { image, pullMs, unpackMs: Date.now() - unpackStarted };
      } finally {
        await rm(stage, { recursive: true, force: true });
      }
    });
  }

  /**
   * A registry the operator did not name (IMAGE_ALLOWED_REGISTRIES, IMAGE_INSECURE_REGISTRIES)
   * must have public addresses only: the worker connects to it, and a team must not reach the
   * platform's private network through it. (skopeo resolves the name again, and follows the
   * registry's redirects and token realm unchecked: shared deployments set IMAGE_ALLOWED_REGISTRIES.)
   */
  private async assertRegistryReachable(registry: string): Promise<void> {
    const named = [...this.allowedRegistries, ...this.config.insecureRegistries];
    if (named.length && isRegistryAllowed(registry, named)) return;
    const host = registry === 'docker.io' ? 'registry-1.docker.io' : registry;
    const match = /^(.*?)(?::(\d+))?$/.exec(host)!;
    const verdict = await this.rules.resolveEvery(match[1]!, Number(match[2] ?? 443));
    if (!verdict.allowed) {
      throw new ImagePullError(
        'registry_not_allowed',
        `${verdict.reason}; an operator may allow a private registry with IMAGE_ALLOWED_REGISTRIES`,
      );
    }
  }

  private async access(
    registry: string,
    home: string,
    credential: RegistryCredential | undefined,
    tools: ToolSandbox,
  ): Promise<RegistryAccess> {
    const authFile = path.join(home, 'auth.json');
    const auths = credential
      ? { [registry]: { auth: Buffer.from(`${credential.username}:${credential.password}`).toString('base64') } }
      : {};
    await writeFile(authFile, JSON.stringify({ auths }), { mode: 0o600 });
    // Private to the tools' uid: no run's, and no other worker user's.
    if (tools.uid !== undefined) {
      await chown(home, tools.uid, tools.uid);
      await chown(authFile, tools.uid, tools.uid);
    }
    return {
      insecure: this.config.insecureRegistries.includes(registry),
      authFile,
      isolatedHome: home,
      tools,
    };
  }
}
