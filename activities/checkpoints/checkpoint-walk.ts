import { rename, rm } from 'node:fs/promises';
import { createConnection, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { extract, type Header } from 'tar-stream';
import { HOST_PATH } from '../sandbox/host-root';
import type { ProcessLauncher } from '../sandbox/launched-process';
import type { ManifestEntry } from '../../services/checkpoints/checkpoint-manifest';
import type { CheckpointObjects } from './checkpoint-objects';

/** How sandbox-init's `-checkpoint` and `-restore` are started on the host side. */
export interface HostTools {
  launch: ProcessLauncher;
  /** sandbox-init on the host. */
  initPath: string;
}

/** Counts of the whole of a run's files when a walk was made (checkpoint.go's walkSummary). */
export interface WalkSummary {
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
  changed: number;
  deleted: number;
  skipped: number;
  /** Only what the run's filesystem watcher saw change was looked at, not every file. */
  delta?: boolean;
  /** The index was not the parent's (one recorded without its index saved): every file is listed. */
  fresh?: boolean;
}

export interface WalkResult {
  summary: WalkSummary;
  /** What changed since the index, with their bytes stored. */
  entries: ManifestEntry[];
  deleted: string[];
}

/** A walk, and what becomes of the index it made: one of the two must be called. */
export interface Walk extends WalkResult {
  /** The walk's index is the next one to start from, as `checkpoint`'s (the one recorded, or the parent when nothing changed). */
  keepIndex(checkpoint: string): Promise<void>;
  /** The last index stays (nothing was recorded). */
  dropIndex(): Promise<void>;
}

const META_PREFIX = '.agent-runs/';

/** What a checkpoint's walk is told (checkpoint.go's checkpointRequest). */
interface WalkRequest {
  roots: string;
  index: string;
  exclude: string;
  excludeNames: string;
  checkpoint: string;
  parent: string;
  pids: number[];
  pidsKnown: boolean;
}

/**
 * Walks a run's files (checkpoint.go: on the host, as the worker, following nothing) and stores
 * what changed since `index` in `objects`. The run's filesystem watcher takes the checkpoint
 * itself when it runs (watch.go: only the paths it saw change are looked at, and no process is
 * started); otherwise `sandbox-init -checkpoint` walks everything. The new index is left at
 * `<index>.next`.
 */
export async function walkChanges(
  tools: HostTools,
  options: {
    roots: Record<string, string>;
    index: string;
    exclude: string[];
    excludeNames: string[];
    /** The run's filesystem watcher (run-disk-watchers.ts), if it has one. */
    socket?: string;
    /** The checkpoint this walk becomes when recorded, and the last one (whose index `index` should be). */
    checkpoint: string;
    parent?: string;
    /** The run's processes, whose files open for writing are looked at again; undefined: unknown (no delta then). */
    pids?: number[];
  },
  objects: CheckpointObjects,
): Promise<Walk> {
  const request: WalkRequest = {
    roots: Object.entries(options.roots)
      .map(([name, dir]) => `${name}=${dir}`)
      .join(','),
    index: options.index,
    exclude: options.exclude.join(','),
    excludeNames: options.excludeNames.join(','),
    checkpoint: options.checkpoint,
    parent: options.parent ?? '',
    pids: options.pids ?? [],
    pidsKnown: options.pids !== undefined,
  };
  const watcher = options.socket ? await connectWatcher(options.socket) : undefined;
  if (watcher) return walkInWatcher(watcher, request, objects);
  return walkInProcess(tools, request, objects);
}

/** A connection to the run's watcher; undefined when none listens there (it then walks in a process). */
function connectWatcher(socket: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    // Its side stays open after the stream: it says `commit` on it (keepIndex).
    const connection = createConnection({ path: socket, allowHalfOpen: true });
    connection.once('connect', () => {
      connection.removeAllListeners('error');
      resolve(connection);
    });
    connection.once('error', () => {
      connection.destroy();
      resolve(undefined);
    });
  });
}

async function walkInWatcher(watcher: Socket, request: WalkRequest, objects: CheckpointObjects): Promise<Walk> {
  const failed = new Promise<never>((_, reject) => watcher.once('error', reject));
  failed.catch(() => undefined);
  watcher.write(`checkpoint ${JSON.stringify(request)}\n`);
  let result: WalkResult;
  try {
    result = await Promise.race([readWalk(watcher, objects), failed]);
  } catch (err) {
    watcher.destroy();
    throw new Error(`the checkpoint's walk in the run's watcher failed: ${(err as Error).message}`);
  }
  return {
    ...result,
    // The watcher saves the index after this; the run's next request to it is served after that.
    keepIndex: async (checkpoint) => void watcher.end(`commit ${checkpoint}\n`),
    dropIndex: async () => void watcher.destroy(),
  };
}

async function walkInProcess(tools: HostTools, request: WalkRequest, objects: CheckpointObjects): Promise<Walk> {
  const args = ['-checkpoint', '-root', request.roots, '-index', request.index, '-id', request.checkpoint];
  args.push('-parent', request.parent, '-exclude', request.exclude, '-exclude-name', request.excludeNames);
  const walker = tools.launch(tools.initPath, args, { cwd: '/', env: { PATH: HOST_PATH } });
  let stderr = '';
  walker.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4096)));
  const exited = new Promise<number | null>((resolve, reject) => {
    walker.once('error', reject);
    walker.once('close', (code: number | null) => resolve(code));
  });
  let result: WalkResult;
  try {
    result = await readWalk(walker.stdout, objects);
  } catch (err) {
    walker.signal('SIGKILL');
    await exited.catch(() => undefined);
    throw new Error(`the checkpoint's walk failed: ${(err as Error).message}; ${stderr.trim()}`);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`the checkpoint's walk exited ${code}: ${stderr.trim()}`);
  const next = `${request.index}.next`;
  return {
    ...result,
    // The index it wrote is the new checkpoint's; when nothing changed the last one stays.
    keepIndex: (checkpoint) =>
      checkpoint === request.checkpoint ? renameIfThere(next, request.index) : rm(next, { force: true }),
    dropIndex: () => rm(next, { force: true }),
  };
}

async function renameIfThere(from: string, to: string): Promise<void> {
  await rename(from, to).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** Reads a walk's tar stream: the changed entries (stored in `objects`), what is gone, the summary. */
async function readWalk(stream: Readable, objects: CheckpointObjects): Promise<WalkResult> {
  const result: WalkResult = { summary: emptySummary(), entries: [], deleted: [] };
  let summarized = false;
  const tar = extract();
  stream.pipe(tar);
  for await (const entry of tar) {
    const { header } = entry;
    if (header.name.startsWith(META_PREFIX)) {
      const text = Buffer.concat(await collect(entry as AsyncIterable<Buffer>)).toString('utf8');
      if (header.name === `${META_PREFIX}summary`) {
        result.summary = JSON.parse(text) as WalkSummary;
        summarized = true;
      }
      if (header.name === `${META_PREFIX}deleted` && text) result.deleted = text.split('\0');
      if (header.name === `${META_PREFIX}error`) throw new Error(text);
      continue;
    }
    result.entries.push(await entryOf(header, entry as AsyncIterable<Buffer>, objects));
  }
  // Written last: a stream cut short between two entries is no walk.
  if (!summarized) throw new Error('the walk ended before its summary');
  return result;
}

async function entryOf(
  header: Header,
  body: AsyncIterable<Buffer>,
  objects: CheckpointObjects,
): Promise<ManifestEntry> {
  const common = { path: header.name.replace(/\/$/, ''), mode: header.mode & 0o7777, mtime: mtimeOf(header) };
  if (header.type === 'directory') {
    await drain(body);
    return { ...common, type: 'dir' };
  }
  if (header.type === 'symlink') {
    await drain(body);
    return { ...common, type: 'symlink', target: header.linkname };
  }
  if (header.type !== 'file') throw new Error(`unexpected ${header.type} entry ${header.name}`);
  const size = header.size;
  return { ...common, type: 'file', size, content: await objects.file(body, size) };
}

/** The modification time in nanoseconds: the PAX record has them all, the header only milliseconds. */
function mtimeOf(header: Header): string {
  const pax = (header.pax as Record<string, string> | null | undefined)?.mtime;
  const match = pax ? /^(-?\d+)(?:\.(\d{1,9}))?$/.exec(pax) : null;
  if (match) return (BigInt(match[1]!) * 1_000_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'))).toString();
  return (BigInt(header.mtime.getTime()) * 1_000_000n).toString();
}

function emptySummary(): WalkSummary {
  return { files: 0, dirs: 0, symlinks: 0, bytes: 0, changed: 0, deleted: 0, skipped: 0 };
}

async function collect(body: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const pieces: Buffer[] = [];
  for await (const piece of body) pieces.push(piece);
  return pieces;
}

async function drain(body: AsyncIterable<Buffer>): Promise<void> {
  for await (const piece of body) void piece;
}
