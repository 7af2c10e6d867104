import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { DataSource, EntityManager } from 'typeorm';
import { newUuidV7 } from '../../core/ids';
import { insertCheckpoint, type NewCheckpoint } from '../../db/checkpoints';
import { latestCheckpoint, type CheckpointRow } from '../../db/checkpoint-reads';
import type { ObjectStore } from '../../infra/object-store/object-store';
import { HOST_PATH } from '../sandbox/host-root';
import { watchSocket } from '../sandbox/run-disk-watchers';
import { SNAPSHOT_INDEX } from '../workspace/git';
import { runStateDir, workspaceDir } from '../workspace/workspace-paths';
import { checkpointDocuments, checkpointEntries } from '../../services/checkpoints/checkpoint-entries';
import {
  composeManifests,
  encodeManifest,
  type ManifestDocument,
  type ManifestEntry,
} from '../../services/checkpoints/checkpoint-manifest';
import { CheckpointObjects } from './checkpoint-objects';
import { checkpointTar } from '../../services/checkpoints/checkpoint-tar';
import { walkChanges, type HostTools, type WalkResult } from './checkpoint-walk';

/** A full manifest at least every so many checkpoints: composing one never reads more manifests than this. */
const MAX_CHAIN = 32;

/** Caches of the run's home, left out of its checkpoints (docs/concepts.md says which). */
export const CHECKPOINT_CACHE_PATHS = ['home/.cache', 'home/.npm/_cacache'];
/** The diff step's own index in each repository (and its lock), rewritten every step: left out wherever they are. */
const CHECKPOINT_CACHE_NAMES = [SNAPSHOT_INDEX, `${SNAPSHOT_INDEX}.lock`];

export interface RunCheckpointsDeps {
  dataSource: DataSource;
  store: ObjectStore;
  tools: HostTools;
  workspaceRoot: string;
  /** The owner of restored files: the sandbox's host uid when the worker runs as root. */
  processUid?: number;
  /** The run's processes (its cgroup's): what they hold open for writing is looked at again (open_writers.go); undefined: unknown. */
  runPids?: (runId: string) => Promise<number[] | undefined>;
}

/**
 * A run's checkpoints on this worker: each records what its files (workspace and home) are
 * after a step, storing only what changed since the one before; a run's files are made again
 * from one on another worker, or for a fork.
 */
export class RunCheckpoints {
  constructor(private readonly deps: RunCheckpointsDeps) {}

  /**
   * Takes the run's checkpoint after `step` steps of `turn`: undefined when nothing changed
   * since its last one (or the step already has one). Whatever fails leaves the last checkpoint
   * as it was: the next one takes what changed since then.
   */
  async take(runId: string, at: { turn: number; step: number }): Promise<NewCheckpoint | undefined> {
    const parent = await latestCheckpoint(this.deps.dataSource.manager, runId);
    const index = this.indexFile(runId);
    // Without an index of its last checkpoint (a new workspace) the walk cannot tell what is gone:
    // it lists every file and the manifest is a full one.
    const fromIndex = parent !== undefined && existsSync(index);
    if (!fromIndex) await rm(index, { force: true });
    const objects = new CheckpointObjects(this.deps.store);
    const checkpointId = newUuidV7();
    const walk = await walkChanges(
      this.deps.tools,
      {
        roots: this.roots(runId),
        index,
        exclude: CHECKPOINT_CACHE_PATHS,
        excludeNames: CHECKPOINT_CACHE_NAMES,
        socket: watchSocket(this.deps.workspaceRoot, runId),
        checkpoint: checkpointId,
        parent: parent?.checkpointId,
        pids: await this.deps.runPids?.(runId),
      },
      objects,
    );
    let indexOf: string | undefined;
    try {
      if (parent && walk.entries.length === 0 && walk.deleted.length === 0) {
        indexOf = parent.checkpointId;
        return undefined;
      }
      const row = await this.record(runId, at, checkpointId, parent, walk, fromIndex && !walk.summary.fresh, objects);
      if (row) indexOf = checkpointId;
      return row;
    } finally {
      await (indexOf ? walk.keepIndex(indexOf) : walk.dropIndex());
    }
  }

  /** Stores the walk's manifest and records it as the run's checkpoint; undefined when the step already has one. */
  private async record(
    runId: string,
    at: { turn: number; step: number },
    checkpointId: string,
    parent: CheckpointRow | undefined,
    walk: WalkResult,
    delta: boolean,
    objects: CheckpointObjects,
  ): Promise<NewCheckpoint | undefined> {
    objects.finish();
    const changes: ManifestDocument = { version: 1, full: !delta, entries: walk.entries, deleted: walk.deleted };
    const full = !delta || !parent || parent.chainLength >= MAX_CHAIN;
    const document = full && delta && parent ? await this.fullAfter(parent, changes) : changes;
    const row = {
      checkpointId,
      runId,
      turn: at.turn,
      step: at.step,
      parentId: parent?.checkpointId ?? null,
      manifestKey: objects.object(encodeManifest(document)),
      fullManifest: full,
      chainLength: full || !parent ? 1 : parent.chainLength + 1,
      files: walk.summary.files,
      bytes: walk.summary.bytes,
      bytesAdded: objects.addedBytes,
    };
    // Everything the row names is stored before the row is.
    await objects.stored();
    // A step that already has one (a retried step) keeps it; this walk's changes come with the next.
    return (await insertCheckpoint(this.deps.dataSource.manager, row, objects.objects)) ? row : undefined;
  }

  /**
   * Makes the run's files (its workspace and home, which must be new and empty) what
   * `checkpoint` holds, owned by the run's processes, and the index its next checkpoint
   * compares with.
   */
  async restore(runId: string, checkpoint: CheckpointRow): Promise<void> {
    const entries = await this.entriesOf(this.deps.dataSource.manager, checkpoint);
    const roots = this.roots(runId);
    const uid = this.deps.processUid;
    const args = [
      '-restore',
      '-root',
      rootsArg(roots),
      ...(uid === undefined ? [] : ['-uid', `${uid}`, '-gid', `${uid}`]),
    ];
    await this.hostTool(args, checkpointTar(this.deps.store, entries) as AsyncIterable<Buffer>);
    // The index is the checkpoint's, with the watcher's epoch (asked before the walk): the next
    // checkpoint is a delta.
    const socket = watchSocket(this.deps.workspaceRoot, runId);
    const index = this.indexFile(runId);
    await this.hostTool([
      '-checkpoint',
      '-index-only',
      '-root',
      rootsArg(roots),
      '-index',
      index,
      '-id',
      checkpoint.checkpointId,
      '-socket',
      socket,
    ]);
  }

  /** Every entry a checkpoint holds, in path order. */
  async entriesOf(manager: EntityManager, checkpoint: CheckpointRow): Promise<ManifestEntry[]> {
    return checkpointEntries(manager, this.deps.store, checkpoint);
  }

  private async fullAfter(parent: CheckpointRow, delta: ManifestDocument): Promise<ManifestDocument> {
    const documents = await checkpointDocuments(this.deps.dataSource.manager, this.deps.store, parent);
    return { version: 1, full: true, entries: composeManifests([...documents, delta]), deleted: [] };
  }

  private roots(runId: string): Record<string, string> {
    return {
      workspace: workspaceDir(this.deps.workspaceRoot, runId),
      home: path.join(runStateDir(this.deps.workspaceRoot, runId), 'home'),
    };
  }

  /** The stat index of the run's last checkpoint, in its state (root's, out of the sandbox's view). */
  private indexFile(runId: string): string {
    return path.join(runStateDir(this.deps.workspaceRoot, runId), 'checkpoint.index');
  }

  /** Runs sandbox-init's `args` on the host, with `input` on its standard input; rejects with its standard error. */
  private async hostTool(args: string[], input?: AsyncIterable<Buffer>): Promise<void> {
    const { launch, initPath } = this.deps.tools;
    const child = launch(initPath, args, { cwd: '/', env: { PATH: HOST_PATH }, stdin: input !== undefined });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4096)));
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code: number | null) => resolve(code));
    });
    if (input)
      await pipeline(input, child.stdin!).catch(async (err: unknown) => {
        // It died reading: its own error says why.
        if ((await exited) === 0) throw err;
      });
    const code = await exited;
    if (code !== 0) throw new Error(`sandbox-init ${args[0]} exited ${code}: ${stderr.trim()}`);
  }
}

function rootsArg(roots: Record<string, string>): string {
  return Object.entries(roots)
    .map(([name, dir]) => `${name}=${dir}`)
    .join(',');
}
