import { createHash } from 'node:crypto';
import { mib, seconds } from '../../core/human-units';
import { readFile } from 'node:fs/promises';
import { Context } from '@temporalio/activity';
import { repositoryNames, type Environment } from '../../db/environment-reads';
import type { RunImage } from '../../db/run-images';
import type { ActivityDeps } from '../deps';
import { runNetworkPolicy } from '../sandbox/run-network-policy';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { remoteHead, repositoryUrl, resolveCommit } from './git';
import type { WorkspaceContext } from './workspace-context';

/** Bumped when what a snapshot holds, or how it is made, changes: older snapshots are then never matched. */
const SNAPSHOT_FORMAT = 1;

/** The tar (run in the run's sandbox, on the host's root) that writes a snapshot's layer of `inside` to stdout. */
export function tarCreate(inside: string[]): [string, ...string[]] {
  return ['tar', '--create', '--file=-', '--directory=/', '--numeric-owner', '--sparse', ...inside];
}

/** The tar that unpacks a layer from stdin into the run's (empty) workspace and home. */
export function tarExtract(inside: string[]): [string, ...string[]] {
  return ['tar', '--extract', '--file=-', '--directory=/', '--no-same-owner', '--no-overwrite-dir', ...inside];
}

/** One provisioning's use of its environment's snapshot: restore it, or keep one after setup. */
export interface SnapshotPlan {
  /** Unpacks the snapshot into the fresh, empty workspace and home; false when there is none to use. */
  restore(): Promise<boolean>;
  /** Keeps the workspace and home as setup left them; never fails the provisioning. */
  save(): Promise<void>;
}

/**
 * Environment setup snapshots, for environments with `setup_snapshot`: the workspace and the
 * sandbox's home right after setup, kept as one tar layer (activities/images/snapshot-store.ts)
 * and restored instead of cloning and setting up again. The key names everything setup's result
 * depends on, so a change to any of it misses: the environment, its repositories, setup commands,
 * network policy and image (its configuration), the commit each repository's HEAD names now, the
 * image's digest (or, without one, the worker's OS release, Node.js and read-only toolchains), and
 * the snapshot format.
 *
 * The tar runs inside the run's own sandbox, as its user, both ways: a snapshot's bytes are the
 * run's and never meet a host process with more rights than the run had.
 */
export function createEnvironmentSnapshots(
  { config, sandbox, images, workspaceQueue }: ActivityDeps,
  { auth, note }: WorkspaceContext,
) {
  let hostRelease: Promise<string> | undefined;
  const timeoutMs = config.workspace.setupCommandTimeoutSeconds * 1000;

  /** The key of the environment's snapshot now, with the commits it names; or why there is none. */
  async function keyFor(
    processes: RunProcesses,
    env: Environment,
    imageDigest: string | undefined,
    signal: AbortSignal,
  ): Promise<{ key: string; heads: Record<string, string> } | { why: string }> {
    if (sandbox.kind === 'none') {
      return { why: 'snapshots need the sandbox, and this worker runs with AGENT_SANDBOX=none' };
    }
    const heads: Record<string, string> = {};
    for (const repo of env.config.github_repos ?? []) {
      const url = repositoryUrl(config.workspace.gitBaseUrl, repo.owner, repo.repo);
      const head = await remoteHead(processes, url, auth, signal);
      if (!head) return { why: `the git host did not say which commit ${repo.owner}/${repo.repo} is at` };
      heads[repo.repo] = head;
    }
    hostRelease ??= readFile('/etc/os-release', 'utf8').catch(() => 'unknown');
    const root = imageDigest ?? {
      os: await hostRelease,
      node: process.version,
      readonly: config.sandbox.readonlyPaths,
    };
    const key = createHash('sha256')
      .update(
        JSON.stringify({
          format: SNAPSHOT_FORMAT,
          environment: env.uid,
          docker_image: env.config.docker_image ?? null,
          github_repos: env.config.github_repos ?? [],
          setup_commands: env.config.setup_commands ?? [],
          network: runNetworkPolicy(config, env),
          root,
          heads,
        }),
      )
      .digest('hex');
    return { key, heads };
  }

  return {
    /**
     * What this provisioning does with the environment's snapshot; undefined (the timeline says
     * why) when it cannot have one. `stillCurrent` says whether the workspace is still this
     * provisioning's (a retried provisioning on this worker may have started it afresh).
     */
    async plan(input: {
      runId: string;
      turn: number;
      processes: RunProcesses;
      env: Environment;
      /** The image the workspace runs on, if any: its digest is part of the snapshot's key. */
      image: RunImage | undefined;
      stillCurrent: () => Promise<boolean>;
    }): Promise<SnapshotPlan | undefined> {
      const { runId, turn, processes, env, stillCurrent } = input;
      const ctx = Context.current();
      const signal = ctx.cancellationSignal;
      const attempt = `t${turn}-${ctx.info.activityId}-a${ctx.info.attempt}`;
      const found = await keyFor(processes, env, input.image?.digest, signal);
      if (!('key' in found)) {
        await note(runId, turn, `snapshot-none-${attempt}`, `No setup snapshot: ${found.why}.`);
        return undefined;
      }
      const { key, heads } = found;
      const short = key.slice(0, 12);
      const inside = [sandbox.workspacePath(runId), sandbox.homePath(runId)].map((p) => p.slice(1));

      return {
        async restore() {
          const started = Date.now();
          const outcome = await images.snapshots.restore(key, runId, async (layer) => {
            await processes.exec(tarExtract(inside), { input: layer, signal, timeoutMs, maxBuffer: 1024 * 1024 });
          });
          if (!outcome.restored) {
            const why: Record<typeof outcome.why, string | undefined> = {
              none: undefined,
              expired: `The setup snapshot ${short} was older than ENVIRONMENT_SNAPSHOT_MAX_AGE_HOURS: setup runs again.`,
              'in use': `The setup snapshot ${short} is too old, and another run is restoring it: setup runs again.`,
              damaged:
                outcome.why === 'damaged'
                  ? `The setup snapshot ${short} is damaged (${outcome.detail})${outcome.removed ? ' and was removed' : ''}: setup runs again.`
                  : undefined,
            };
            const message = why[outcome.why];
            if (message) await note(runId, turn, `snapshot-restore-${attempt}`, message);
            return false;
          }
          const { snapshot } = outcome;
          const where = ctx.info.taskQueue === workspaceQueue ? 'this' : 'worker';
          // The workspace's notice (`workspace-t…`): the timeline's worker_container_ready, as a cloned one's is.
          await note(
            runId,
            turn,
            `workspace-${attempt}-restored`,
            `Workspace on ${where} ${workspaceQueue}: restored the setup snapshot ${short} of environment ${env.config.name} (${env.uid}) in ${seconds(Date.now() - started)} (${mib(snapshot.diskBytes)}, layer ${snapshot.layerDigest}, kept ${snapshot.createdAt}): ${repositoryNames(env) || 'no repositories'} at the same commits; setup commands not run again.`,
            input.image,
          );
          return true;
        },

        async save() {
          const started = Date.now();
          let message: string;
          try {
            // The clone may have found a commit newer than the key's: that result is not the key's.
            for (const [repo, head] of Object.entries(heads)) {
              const cloned = await resolveCommit(processes, repo, 'HEAD', signal);
              if (cloned !== head) {
                await note(
                  runId,
                  turn,
                  `snapshot-save-${attempt}`,
                  `Not kept as a setup snapshot: ${repo} moved to another commit while it was cloned.`,
                );
                return;
              }
            }
            const outcome = await images.snapshots.save(
              key,
              env.uid,
              async (layer) => {
                await processes.exec(tarCreate(inside), { output: layer, signal, timeoutMs });
              },
              stillCurrent,
            );
            message = outcome.saved
              ? [
                  `Kept this workspace as the setup snapshot ${short} in ${seconds(Date.now() - started)} (${mib(outcome.snapshot.diskBytes)}, layer ${outcome.snapshot.layerDigest}): the next run of this environment with the same commits, image and configuration starts from it.`,
                  ...(outcome.replaced ? ["It replaces the environment's older snapshot."] : []),
                  ...(outcome.evicted.length
                    ? [`Removed from the cache to make room: ${outcome.evicted.join(', ')}.`]
                    : []),
                ].join(' ')
              : `Not kept as a setup snapshot: ${outcome.why}.`;
          } catch (err) {
            if (signal.aborted) throw err;
            message = `Not kept as a setup snapshot: ${(err as Error).message}`;
          }
          await note(runId, turn, `snapshot-save-${attempt}`, message);
        },
      };
    },
  };
}
