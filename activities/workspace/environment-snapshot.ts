import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Context } from '@temporalio/activity';
import { repositoryNames, type Environment } from '../../db/environments';
import type { ActivityDeps } from '../deps';
import type { SnapshotRestore } from '../images/snapshot-store';
import { runNetworkPolicy } from '../sandbox/run-network-policy';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { remoteHead, repositoryUrl } from './git';
import type { WorkspaceContext } from './workspace-context';

/** Bumped when what a snapshot holds, or how it is made, changes: older snapshots are then never matched. */
const SNAPSHOT_FORMAT = 1;

export type SnapshotKey = { key: string } | { key: undefined; why: string };

/**
 * Environment setup snapshots, for environments with `setup_snapshot`: the workspace and the
 * sandbox's home right after setup, kept as one tar layer (activities/images/snapshot-store.ts)
 * and restored instead of cloning and setting up again. The key names everything setup's result
 * depends on, so a change to any of it misses: the environment's repositories, setup commands,
 * network policy and image (its configuration), the commit each repository's HEAD names now, the
 * image's digest (or, without one, the worker's OS release), and the snapshot format.
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
  const inside = (runId: string) => [sandbox.workspacePath(runId), sandbox.homePath(runId)].map((p) => p.slice(1));

  return {
    async keyFor(
      processes: RunProcesses,
      env: Environment,
      imageDigest: string | undefined,
      signal: AbortSignal,
    ): Promise<SnapshotKey> {
      if (sandbox.kind === 'none') {
        return { key: undefined, why: 'snapshots need the sandbox, and this worker runs with AGENT_SANDBOX=none' };
      }
      const heads: Record<string, string> = {};
      for (const repo of env.config.github_repos ?? []) {
        const url = repositoryUrl(config.workspace.gitBaseUrl, repo.owner, repo.repo);
        const head = await remoteHead(processes, url, auth, signal);
        if (!head) {
          return { key: undefined, why: `the git host did not say which commit ${repo.owner}/${repo.repo} is at` };
        }
        heads[`${repo.owner}/${repo.repo}`] = head;
      }
      hostRelease ??= readFile('/etc/os-release', 'utf8').catch(() => 'unknown');
      const key = createHash('sha256')
        .update(
          JSON.stringify({
            format: SNAPSHOT_FORMAT,
            environment: env.uid,
            docker_image: env.config.docker_image ?? null,
            github_repos: env.config.github_repos ?? [],
            setup_commands: env.config.setup_commands ?? [],
            network: runNetworkPolicy(config, env),
            root: imageDigest ?? (await hostRelease),
            heads,
          }),
        )
        .digest('hex');
      return { key };
    },

    /**
     * Unpacks the key's snapshot into the run's fresh, empty workspace and home, when there is a
     * fresh one; false otherwise. Its repositories are at the commits the key names, and their
     * factories were recorded when it was made, at those same commits.
     */
    async restore(
      runId: string,
      turn: number,
      attempt: string,
      processes: RunProcesses,
      env: Environment,
      key: string,
    ): Promise<boolean> {
      const ctx = Context.current();
      const signal = ctx.cancellationSignal;
      const started = Date.now();
      let outcome: SnapshotRestore;
      try {
        outcome = await images.snapshots.restore(
          key,
          runId,
          async (layer) => {
            await processes.exec(
              [
                'tar',
                '--extract',
                '--file=-',
                '--directory=/',
                '--no-same-owner',
                '--no-overwrite-dir',
                ...inside(runId),
              ],
              { input: layer, signal, timeoutMs, maxBuffer: 1024 * 1024 },
            );
          },
          signal,
        );
      } catch (err) {
        if (!signal.aborted) {
          // The next attempt of the provisioning starts afresh, without the snapshot.
          await note(runId, turn, `snapshot-${attempt}`, `${capitalised((err as Error).message)}: setup runs again.`);
        }
        throw err;
      }
      if (!outcome.restored) {
        if (outcome.why !== 'none') {
          await note(
            runId,
            turn,
            `snapshot-${attempt}`,
            outcome.why === 'expired'
              ? `The setup snapshot ${key.slice(0, 12)} was older than ENVIRONMENT_SNAPSHOT_MAX_AGE_HOURS: setup runs again.`
              : `The setup snapshot ${key.slice(0, 12)} is too old and another run is restoring it: setup runs again.`,
          );
        }
        return false;
      }
      const { snapshot } = outcome;
      const where = ctx.info.taskQueue === workspaceQueue ? 'this' : 'worker';
      await note(
        runId,
        turn,
        `workspace-t${turn}-${ctx.info.activityId}`,
        `Workspace on ${where} ${workspaceQueue}: restored the setup snapshot ${key.slice(0, 12)} of environment ${env.config.name} (${env.uid}) in ${seconds(Date.now() - started)} (${mib(snapshot.diskBytes)}, layer ${snapshot.layerDigest}, kept ${snapshot.createdAt}): ${repositoryNames(env) || 'no repositories'} at the same commits; setup commands not run again.`,
      );
      return true;
    },

    /** Keeps the run's workspace and home, as setup left them, as the key's snapshot; never fails the run. */
    async save(
      runId: string,
      turn: number,
      attempt: string,
      processes: RunProcesses,
      env: Environment,
      key: string,
    ): Promise<void> {
      const signal = Context.current().cancellationSignal;
      const started = Date.now();
      let message: string;
      try {
        const outcome = await images.snapshots.save(key, env.uid, async (layer) => {
          await processes.exec(
            ['tar', '--create', '--file=-', '--directory=/', '--numeric-owner', '--sparse', ...inside(runId)],
            { output: layer, signal, timeoutMs },
          );
        });
        message = outcome.saved
          ? `Kept this workspace as the setup snapshot ${key.slice(0, 12)} in ${seconds(Date.now() - started)} (${mib(outcome.snapshot.diskBytes)}, layer ${outcome.snapshot.layerDigest}): the next run of this environment with the same commits, image and configuration starts from it.${outcome.evicted.length ? ` Removed from the cache to make room: ${outcome.evicted.join(', ')}.` : ''}`
          : `Not kept as a setup snapshot: ${outcome.why}.`;
      } catch (err) {
        if (signal.aborted) throw err;
        message = `Not kept as a setup snapshot: ${(err as Error).message}`;
      }
      await note(runId, turn, `snapshot-${attempt}`, message);
    },
  };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
