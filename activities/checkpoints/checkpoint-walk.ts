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
}

export interface WalkResult {
  summary: WalkSummary;
  /** What changed since the index, with their bytes stored. */
  entries: ManifestEntry[];
  deleted: string[];
}

const META_PREFIX = '.agent-runs/';

/**
 * Walks a run's files with `sandbox-init -checkpoint` (on the host, as the worker: see
 * checkpoint.go for why it follows nothing) and stores what changed since `index` in `objects`:
 * only the paths the run's filesystem watcher saw change when it has them (checkpoint_delta.go).
 * The new index is left at `<index>.next`.
 */
export async function walkChanges(
  tools: HostTools,
  options: {
    roots: Record<string, string>;
    index: string;
    exclude: string[];
    excludeNames: string[];
    /** The run's filesystem watcher (run-disk-watchers.ts): asked what changed; without one, or without its answer, the walk is whole. */
    socket?: string;
  },
  objects: CheckpointObjects,
): Promise<WalkResult> {
  const args = [
    ...(options.socket ? ['-socket', options.socket] : []),
    '-checkpoint',
    '-root',
    Object.entries(options.roots)
      .map(([name, dir]) => `${name}=${dir}`)
      .join(','),
    '-index',
    options.index,
    '-exclude',
    options.exclude.join(','),
    '-exclude-name',
    options.excludeNames.join(','),
  ];
  const walker = tools.launch(tools.initPath, args, { cwd: '/', env: { PATH: HOST_PATH } });
  let stderr = '';
  walker.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4096)));
  const exited = new Promise<number | null>((resolve, reject) => {
    walker.once('error', reject);
    walker.once('close', (code: number | null) => resolve(code));
  });
  const result: WalkResult = { summary: emptySummary(), entries: [], deleted: [] };
  try {
    const tar = extract();
    walker.stdout.pipe(tar);
    for await (const entry of tar) {
      const { header } = entry;
      if (header.name.startsWith(META_PREFIX)) {
        const text = Buffer.concat(await collect(entry as AsyncIterable<Buffer>)).toString('utf8');
        if (header.name === `${META_PREFIX}summary`) result.summary = JSON.parse(text) as WalkSummary;
        if (header.name === `${META_PREFIX}deleted` && text) result.deleted = text.split('\0');
        continue;
      }
      result.entries.push(await entryOf(header, entry as AsyncIterable<Buffer>, objects));
    }
  } catch (err) {
    walker.signal('SIGKILL');
    await exited.catch(() => undefined);
    throw new Error(`the checkpoint's walk failed: ${(err as Error).message}; ${stderr.trim()}`);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`the checkpoint's walk exited ${code}: ${stderr.trim()}`);
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
