import { createHash, randomUUID } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { walkChanges, type WalkResult } from '../activities/checkpoints/checkpoint-walk';
import { CheckpointObjects } from '../activities/checkpoints/checkpoint-objects';
import { forkLauncher } from '../activities/sandbox/launched-process';
import { watchSocket } from '../activities/sandbox/run-disk-watchers';
import { runDiskPaths, RunDisks } from '../activities/sandbox/run-disks';
import { locateSandboxInit } from '../activities/sandbox/sandbox-init-binary';
import { SpawnServer } from '../activities/sandbox/spawn-server';
import { createObjectStore } from '../infra/object-store/create-object-store';
import type { ContentRef } from '../services/checkpoints/checkpoint-manifest';

/**
 * A run's filesystem watcher (sandbox-init -watch, fanotify) lets a checkpoint look only at what
 * changed: after each kind of change, the checkpoint taken with it must write and delete exactly
 * what a checkpoint that walks every file does, from the same last checkpoint. Real filesystem,
 * real kernel events; the worker's own RunDisks starts the watcher.
 */

const MIB = 1024 * 1024;
const runId = 'watched-run';
let root: string;
let disks: RunDisks;
let initPath: string;
let paths: ReturnType<typeof runDiskPaths>;
let stateDir: string;
let spawnServer: SpawnServer;

jest.setTimeout(180_000);

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-watch-'));
  initPath = await locateSandboxInit(undefined);
  // As a worker starts the watcher: through its spawn server.
  spawnServer = SpawnServer.onHost(initPath);
  disks = new RunDisks({ root, maxBytes: 512 * MIB, initPath, launch: spawnServer.launch });
  expect(await disks.attach(runId)).toBe(true);
  // Else why it could not start (fanotify's groups per user, fs.fanotify.max_user_groups, all taken?).
  expect(disks.watchers?.watching(runId) ? 'watching' : disks.watchers?.lastError).toBe('watching');
  paths = runDiskPaths(root, runId);
  stateDir = paths.stateDir;
  mkdirSync(path.join(stateDir, 'home'), { recursive: true });
  mkdirSync(path.join(stateDir, 'tmp'), { recursive: true });
});

afterAll(async () => {
  await disks?.detach(runId);
  spawnServer?.close();
  rmSync(root, { recursive: true, force: true });
});

/** The bytes of each file by their hash, so that two checkpoints' entries compare. */
class HashingObjects extends CheckpointObjects {
  override async file(body: AsyncIterable<Buffer>, size: number): Promise<ContentRef> {
    const hash = createHash('sha256');
    for await (const piece of body) hash.update(piece);
    return { pack: hash.digest('hex'), offset: size };
  }
}

const ws = (p: string) => path.join(paths.workspace, p);
/** The same workspace path through the filesystem's own mount (the workspace's is a bind): a rename or link to tmp works there. */
const inner = (p: string) => path.join(stateDir, 'workspace', p);

/** The run's processes as a checkpoint is told them: their files open for writing are looked at again. */
let runPids: number[] | undefined = [];

/** The checkpoint each index is of (the last one taken from it). */
const checkpointOf = new Map<string, string>();

/** One checkpoint's walk from `index`, recorded as the last one (its index kept, unless `indexLost`). */
async function take(index: string, watched: boolean, indexLost = false): Promise<WalkResult> {
  const checkpoint = randomUUID();
  const walk = await walkChanges(
    { launch: forkLauncher, initPath },
    {
      roots: { workspace: paths.workspace, home: path.join(stateDir, 'home') },
      index,
      exclude: ['home/.cache'],
      excludeNames: [],
      ...(watched ? { socket: watchSocket(root, runId) } : {}),
      checkpoint,
      parent: checkpointOf.get(index),
      pids: runPids,
    },
    new HashingObjects(createObjectStore({ kind: 'directory', dir: path.join(root, 'objects') })),
  );
  await (indexLost ? walk.dropIndex() : walk.keepIndex(checkpoint));
  checkpointOf.set(index, checkpoint);
  if (watched) await watcherDone();
  return walk;
}

/**
 * Resolves once the watcher has served what was asked before: it serves one request at a time,
 * so a request that it closes at once comes after the last checkpoint's index is saved.
 */
async function watcherDone(): Promise<void> {
  const socket = watchSocket(root, runId);
  if (!existsSync(socket)) return;
  await new Promise<void>((resolve) => {
    const connection = createConnection(socket, () => connection.end('done\n'));
    connection.on('error', () => resolve());
    connection.on('close', () => resolve());
    connection.resume();
  });
}

const watchedIndex = () => path.join(root, 'watched.index');
const walkedIndex = () => path.join(root, 'walked.index');

/** Checkpoints in a row made from the watcher's paths only; the next after WALK_EVERY - 1 of them walks everything (checkpoint.go). */
const WALK_EVERY = 32;
let deltasInARow = 0;

interface Taken extends WalkResult {
  /** This one walked everything because so many before it did not. */
  periodic: boolean;
}

/** The checkpoint with the watcher and the one that walks everything, from the same last one: the same. */
async function both(): Promise<Taken> {
  const periodic = deltasInARow === WALK_EVERY - 1;
  const watched = await take(watchedIndex(), true);
  const walked = await take(walkedIndex(), false);
  deltasInARow = watched.summary.delta ? deltasInARow + 1 : 0;
  const sorted = (r: WalkResult) => [...r.entries].sort((a, b) => a.path.localeCompare(b.path));
  expect(sorted(watched)).toEqual(sorted(walked));
  expect([...watched.deleted].sort()).toEqual([...walked.deleted].sort());
  // The whole tree's counts (the checkpoint's row has them) are the full walk's.
  const { delta } = watched.summary;
  const treeCounts = ({ files, dirs, symlinks, bytes, changed, deleted, skipped }: WalkResult['summary']) => ({
    files,
    dirs,
    symlinks,
    bytes,
    changed,
    deleted,
    skipped,
  });
  expect(treeCounts(watched.summary)).toEqual(treeCounts(walked.summary));
  expect(walked.summary.delta).toBe(false);
  if (periodic) expect(delta).toBe(false);
  expect(indexOf(watchedIndex())).toEqual(indexOf(walkedIndex()));
  return { ...watched, periodic };
}

/** Taken from the watcher's paths only, unless it was the periodic walk of everything. */
function expectDelta(taken: Taken): void {
  expect(taken.summary.delta).toBe(!taken.periodic);
}

/** An index file (checkpoint.go's format) as path → its stat, without the watcher's own entry. */
function indexOf(file: string): Record<string, string> {
  const data = readFileSync(file);
  const out: Record<string, string> = {};
  for (let at = 0; at < data.length;) {
    const n = data.readUInt32LE(at);
    const name = data.subarray(at + 4, at + 4 + n).toString('utf8');
    const stat = data.subarray(at + 4 + n, at + 4 + n + 37);
    if (!name.startsWith('\0')) out[name] = stat.toString('hex');
    at += 4 + n + 37;
  }
  return out;
}

function changedPaths(result: WalkResult): string[] {
  return [...result.entries.map((e) => e.path), ...result.deleted.map((p) => `-${p}`)].sort();
}

test('the first checkpoint walks everything; after it, each checkpoint looks at what the watcher saw change', async () => {
  mkdirSync(ws('src/lib'), { recursive: true });
  writeFileSync(ws('src/a.txt'), 'a');
  writeFileSync(ws('src/lib/b.txt'), 'b');
  writeFileSync(path.join(stateDir, 'home/.bashrc'), 'rc');
  symlinkSync('src/a.txt', ws('link'));
  const first = await both();
  expect(first.summary.delta).toBe(false);
  expect(first.summary.files).toBe(3);

  appendFileSync(ws('src/a.txt'), ' more');
  const second = await both();
  expectDelta(second);
  expect(changedPaths(second)).toEqual(['workspace/src/a.txt']);
});

const cases: [string, () => void, string[]][] = [
  ['a file modified', () => appendFileSync(ws('src/lib/b.txt'), ' more'), ['workspace/src/lib/b.txt']],
  ['a file truncated', () => truncateSync(ws('src/lib/b.txt'), 1), ['workspace/src/lib/b.txt']],
  [
    'files made in new directories',
    () => {
      mkdirSync(ws('new/deep'), { recursive: true });
      writeFileSync(ws('new/deep/n.txt'), 'n');
    },
    ['workspace/new', 'workspace/new/deep', 'workspace/new/deep/n.txt'],
  ],
  ['a file deleted', () => unlinkSync(ws('new/deep/n.txt')), ['-workspace/new/deep/n.txt']],
  [
    'a directory renamed with everything under it',
    () => renameSync(ws('src'), ws('moved')),
    [
      '-workspace/src',
      '-workspace/src/a.txt',
      '-workspace/src/lib',
      '-workspace/src/lib/b.txt',
      'workspace/moved',
      'workspace/moved/a.txt',
      'workspace/moved/lib',
      'workspace/moved/lib/b.txt',
    ],
  ],
  [
    'a directory moved away, changed there, and moved back',
    () => {
      renameSync(inner('moved'), path.join(stateDir, 'tmp/away'));
      writeFileSync(path.join(stateDir, 'tmp/away/lib/while-away.txt'), 'w');
      renameSync(path.join(stateDir, 'tmp/away'), inner('moved'));
    },
    ['workspace/moved/lib/while-away.txt'],
  ],
  ['a tree deleted', () => rmSync(ws('new'), { recursive: true }), ['-workspace/new', '-workspace/new/deep']],
  [
    'modes changed',
    () => {
      chmodSync(ws('moved/lib'), 0o700);
      chmodSync(ws('moved/a.txt'), 0o600);
    },
    ['workspace/moved/a.txt', 'workspace/moved/lib'],
  ],
  [
    'a symlink retargeted, another made a file',
    () => {
      unlinkSync(ws('link'));
      symlinkSync('moved', ws('link'));
      symlinkSync('nowhere', ws('link2'));
    },
    ['workspace/link', 'workspace/link2'],
  ],
  [
    'a file replaced by a rename over it (an editor saving)',
    () => {
      writeFileSync(ws('moved/a.txt.tmp'), 'saved');
      renameSync(ws('moved/a.txt.tmp'), ws('moved/a.txt'));
    },
    ['workspace/moved/a.txt'],
  ],
  ['home changed', () => writeFileSync(path.join(stateDir, 'home/.bashrc'), 'rc2'), ['home/.bashrc']],
  [
    'only what checkpoints leave out changed',
    () => {
      mkdirSync(path.join(stateDir, 'home/.cache'), { recursive: true });
      writeFileSync(path.join(stateDir, 'home/.cache/x'), 'cache');
      writeFileSync(path.join(stateDir, 'tmp/scratch'), 'tmp');
    },
    [],
  ],
];

test.each(cases)(
  '%s: the checkpoint with the watcher writes what the full walk writes',
  async (_name, change, expected) => {
    change();
    const result = await both();
    expectDelta(result);
    expect(changedPaths(result)).toEqual(expected.sort());
  },
);

test('a file written through another name (a hard link out of the checkpointed trees) is found by its inode', async () => {
  writeFileSync(ws('shared.txt'), 'one');
  linkSync(inner('shared.txt'), path.join(stateDir, 'tmp/other-name'));
  linkSync(ws('shared.txt'), ws('moved/second-name'));
  await both();
  appendFileSync(path.join(stateDir, 'tmp/other-name'), ' two');
  const result = await both();
  expectDelta(result);
  expect(changedPaths(result)).toEqual(['workspace/moved/second-name', 'workspace/shared.txt']);
  unlinkSync(path.join(stateDir, 'tmp/other-name'));
  // One name fewer changes the others' change time: the walk writes them again, and so must the delta.
  await both();
});

test("a file written through a shared mapping (no event) while its process lives is in the delta: the run's processes' writable mappings and files are looked at", async () => {
  writeFileSync(ws('mapped.bin'), 'x'.repeat(64));
  await both();
  const script = [
    'import mmap, sys',
    'f = open(sys.argv[1], "r+b"); m = mmap.mmap(f.fileno(), 0); f.close()',
    'print("mapped", flush=True)',
    'for line in sys.stdin:',
    '    m[0:len(line) - 1] = line[:-1].encode(); m.flush(); print("written", flush=True)',
  ].join('\n');
  const writer = spawn('python3', ['-c', script, inner('mapped.bin')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const said = (word: string) =>
    new Promise<void>((resolve) => {
      const listen = (chunk: Buffer) => {
        if (chunk.toString().includes(word)) {
          writer.stdout.off('data', listen);
          resolve();
        }
      };
      writer.stdout.on('data', listen);
    });
  try {
    await said('mapped');
    await both();
    runPids = [writer.pid!];
    writer.stdin.write('through the map\n');
    await said('written');
    const taken = await both();
    expectDelta(taken);
    expect(changedPaths(taken)).toEqual(['workspace/mapped.bin']);
    // Without the run's processes known, no checkpoint vouches for a delta.
    writer.stdin.write('again\n');
    await said('written');
    runPids = undefined;
    expect((await both()).summary.delta).toBe(false);
  } finally {
    runPids = [];
    writer.kill();
  }
});

test('a file renamed out of the trees shows in its other names (a rename changes its change time), and so in the delta', async () => {
  writeFileSync(ws('multi.txt'), 'm');
  linkSync(inner('multi.txt'), path.join(stateDir, 'tmp/multi-other'));
  await both();
  renameSync(path.join(stateDir, 'tmp/multi-other'), path.join(stateDir, 'tmp/multi-renamed'));
  const result = await both();
  expectDelta(result);
  expect(changedPaths(result)).toEqual(['workspace/multi.txt']);
});

/** The watcher's process, by its command line. */
function watcherPid(): number {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    const cmdline = (() => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      } catch {
        return [];
      }
    })();
    if (cmdline.includes('-watch') && cmdline.includes(stateDir)) return Number(pid);
  }
  throw new Error('no watcher');
}

test('events lost while the kernel queue overflowed make the next checkpoint walk everything', async () => {
  const pid = watcherPid();
  process.kill(pid, 'SIGSTOP');
  try {
    // More events than the kernel queues (16,384) while the watcher reads none.
    mkdirSync(ws('many'));
    for (let i = 0; i < 20_000; i++) writeFileSync(ws(`many/f${i}`), '');
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  const result = await both();
  expect(result.summary.delta).toBe(false);
  expect(result.entries.filter((e) => !e.path.startsWith('workspace/many')).map((e) => e.path)).toEqual([]);
  expect(result.entries).toHaveLength(20_001);
  rmSync(ws('many'), { recursive: true });
  writeFileSync(ws('after-overflow'), 'x');
  const next = await both();
  expectDelta(next);
  expect(changedPaths(next)).toContain('workspace/after-overflow');
});

test('a checkpoint recorded without its index saved (the worker died between the two): the next lists every file, never a delta from the index before', async () => {
  await both();
  writeFileSync(ws('made-then-gone.txt'), 'recorded in the checkpoint whose index was lost');
  await take(watchedIndex(), true, true);
  unlinkSync(ws('made-then-gone.txt'));
  const next = await take(watchedIndex(), true);
  // From the index before, the file that came and went would be neither stored nor gone.
  expect(next.summary).toMatchObject({ fresh: true, delta: false });
  expect(next.entries.length).toBe(next.summary.files + next.summary.dirs + next.summary.symlinks);
  expect(next.entries.map((e) => e.path)).not.toContain('workspace/made-then-gone.txt');
  await take(walkedIndex(), false);
  expect(indexOf(watchedIndex())).toEqual(indexOf(walkedIndex()));
  expect((await take(watchedIndex(), true)).summary).toMatchObject({ fresh: false });
});

test('without its watcher (stopped, or started again since the last checkpoint) a checkpoint walks everything', async () => {
  await disks.watchers!.stop(runId);
  appendFileSync(ws('shared.txt'), ' unwatched');
  const unwatched = await both();
  expect(unwatched.summary.delta).toBe(false);
  expect(changedPaths(unwatched)).toEqual(['workspace/moved/second-name', 'workspace/shared.txt']);

  await disks.watchers!.start(runId, stateDir);
  appendFileSync(ws('shared.txt'), ' restarted');
  const restarted = await both();
  expect(restarted.summary.delta).toBe(false);
  appendFileSync(ws('shared.txt'), ' again');
  const again = await both();
  expectDelta(again);
  expect(changedPaths(again)).toEqual(['workspace/moved/second-name', 'workspace/shared.txt']);
});

test('one checkpoint in every 32 in a row walks everything all the same (what no event tells is found then)', async () => {
  const walkedAll: number[] = [];
  for (let i = 0; i < WALK_EVERY; i++) {
    appendFileSync(ws('shared.txt'), `${i}`);
    if (!(await both()).summary.delta) walkedAll.push(i);
  }
  expect(walkedAll).toHaveLength(1);
});

/** A small deterministic generator, so that a failing sequence can be run again. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test.each([36, 7, 11])(
  'random changes (seed %i), also through hard links and renames out of the trees and back: each checkpoint with the watcher equals the full walk',
  async (seed) => {
    const random = prng(seed);
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)]!;
    // On the filesystem's own mount (a rename or link between tmp and the workspace works there).
    const dirs = [
      `workspace/r${seed}`,
      `workspace/r${seed}/a`,
      `workspace/r${seed}/a/c`,
      `home/h${seed}`,
      `tmp/t${seed}`,
    ];
    for (const d of dirs) mkdirSync(path.join(stateDir, d), { recursive: true });
    const target = () => path.join(stateDir, pick(dirs), pick(['x', 'y', 'z', 'c']));
    const done: string[] = [];
    const op = (name: string, ...args: string[]) =>
      done.push(`${name} ${args.map((a) => path.relative(stateDir, a)).join(' ')}`);
    const ops: (() => void)[] = [
      () => writeFileSync(target(), `${random()}`),
      () => {
        const file = target();
        op('append', file);
        appendFileSync(file, 'more');
      },
      () => rmSync(target(), { recursive: true, force: true }),
      () => {
        const [from, to] = [target(), target()];
        op('rename', from, to);
        renameSync(from, to);
      },
      () => chmodSync(target(), pick([0o600, 0o644, 0o755])),
      // This test follows symlinks itself (chmod, write): an absolute one points into its own directory only.
      () => symlinkSync(pick(['x', '../c', path.join(root, 'outside-target')]), target()),
      () => {
        const [from, to] = [target(), target()];
        op('link', from, to);
        linkSync(from, to);
      },
      () => mkdirSync(target()),
      () => {
        const [from, to] = [path.join(stateDir, pick(dirs.slice(1))), target()];
        op('rename', from, to);
        renameSync(from, to);
      },
    ];
    await both();
    for (let round = 0; round < 25; round++) {
      done.length = 0;
      for (let i = 0; i < 8; i++) {
        try {
          pick(ops)();
        } catch {
          // The operation did not apply (no such file, a directory in the way): the tree is as it is.
        }
      }
      const result = await both().catch((err: Error) => {
        throw new Error(`round ${round} after ${done.join('; ')}: ${err.message}`);
      });
      expectDelta(result);
    }
  },
);
