import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { findEnvironment, repositoryNames, type Environment } from '../../db/environment-reads';
import { markEnvironmentSetupFailed } from '../../db/environments';
import type { RunImage } from '../../db/run-images';
import type { ActivityDeps } from '../deps';
import { recordEnvironmentFactories } from '../factories/discover-factories';
import { withHeartbeat } from '../heartbeat';
import { provisionRunImage } from '../images/provision-image';
import { runProcesses, type RunProcesses } from '../sandbox/sandboxed-process';
import { workspaceFiles } from '../sandbox/workspace-files';
import { userFailure } from '../user-failure';
import { createRecordBaseCommits } from './base-commits';
import { createRecordEnvironmentSkills } from './environment-skills';
import { createEnvironmentSnapshots } from './environment-snapshot';
import { cloneRepository, CloneError, initRepository, repositoryUrl, workspaceRepositories } from './git';
import { createRunSetupCommands } from './setup-commands';
import type { WorkspaceContext } from './workspace-context';
import { createClaimWorkspace, type WorkspaceClaim } from './claim-workspace';
import { workspaceDir } from './workspace-paths';
import { createWriteAttachments } from './write-attachments';
import { createCheckpointStep } from '../checkpoints/checkpoint-step';
import { createRestoreRunFiles } from '../checkpoints/restore-run-files';
import { servedModelIds } from '../../services/platform/model-list';

export function createProvisionEnvironment(deps: ActivityDeps, ws: WorkspaceContext) {
  const { dataSource, config, workspaceQueue, sandbox } = deps;
  const { root, auth, provisionedMarker, workspaceIdFile, assertOwnerAllowed, loadRun, note } = ws;
  const runSetupCommands = createRunSetupCommands(deps, ws);
  const recordEnvironmentSkills = createRecordEnvironmentSkills(deps);
  const writeAttachments = createWriteAttachments(deps);
  const { recordBaseCommits, restoreBaseCommits } = createRecordBaseCommits(ws, deps);
  const restoreRunFiles = createRestoreRunFiles(deps, ws);
  const checkpointStep = createCheckpointStep(deps);
  const snapshots = createEnvironmentSnapshots(deps, ws);
  const claimWorkspace = createClaimWorkspace(deps, ws);

  /** The workspace from scratch: the environment's repositories cloned, its setup run (or an empty repository). */
  async function cloneAndSetUp(
    runId: string,
    turn: number,
    env: Environment | null,
    processes: RunProcesses,
    dir: string,
    image: RunImage | undefined,
  ): Promise<void> {
    const ctx = Context.current();
    if (env) {
      for (const repo of env.config.github_repos ?? []) {
        try {
          await cloneRepository(
            processes,
            repositoryUrl(config.workspace.gitBaseUrl, repo.owner, repo.repo),
            repo.repo,
            auth,
            ctx.cancellationSignal,
          );
        } catch (err) {
          if (!(err instanceof CloneError)) throw err;
          await markEnvironmentSetupFailed(dataSource.manager, env.uid, true);
          throw userFailure(
            `Could not clone ${repo.owner}/${repo.repo} for environment ${env.uid}: ${err.message}`,
            'environment_setup_failed',
          );
        }
      }
    }
    if (!env?.config.github_repos?.length) await initRepository(processes);
    await note(
      runId,
      turn,
      `workspace-t${turn}-${ctx.info.activityId}`,
      env
        ? `Workspace on ${ctx.info.taskQueue === workspaceQueue ? 'this' : 'worker'} ${workspaceQueue}: cloned ${repositoryNames(env) || 'no repositories'} for environment ${env.config.name} (${env.uid}).`
        : `Workspace on worker ${workspaceQueue}: no environment, an empty git repository.`,
      image,
    );
    if (env) {
      // As committed: before setup commands can change the files.
      await recordEnvironmentFactories({
        dataSource,
        files: workspaceFiles(processes),
        env,
        checks: { gitAllowedOwners: config.workspace.gitAllowedOwners, servedModels: servedModelIds(config) },
        runId,
        turn,
        attemptKey: ctx.info.activityId,
      });
      await runSetupCommands(runId, turn, ctx.info.activityId, env, dir, ctx.cancellationSignal);
      await recordEnvironmentSkills(runId, env);
    }
  }

  return {
    /** Makes the run's workspace on this worker: clones the environment's repositories, runs its setup. */
    async provisionEnvironment({
      runId,
      turn,
      reason,
      discarded,
    }: WorkspaceClaim): Promise<{ workspaceQueue: string; workspaceId: string }> {
      const ctx = Context.current();
      return withHeartbeat(async () => {
        const run = await loadRun(runId);
        const dir = workspaceDir(root, runId);
        const claimed = await claimWorkspace({ runId, turn, reason, discarded });
        if (claimed.kept) return { workspaceQueue, workspaceId: claimed.workspaceId };
        const { workspaceId } = claimed;
        const processes = runProcesses(sandbox, runId);
        if (sandbox.kind === 'none') {
          await note(
            runId,
            turn,
            `unsandboxed-t${turn}-${ctx.info.activityId}`,
            'Warning: this worker runs with AGENT_SANDBOX=none: commands run unconfined as the worker user, with its view of the machine and network.',
          );
        }

        const envId = run.config.environment_id;
        const env = envId ? await findEnvironment(dataSource.manager, envId, run.team_id) : null;
        if (envId && !env) throw userFailure(`Environment ${envId} no longer exists.`, 'resource_not_found');
        let image: RunImage | undefined;
        if (env?.config.docker_image) {
          let notices = 0;
          const digest = await provisionRunImage(deps, {
            runId,
            run,
            environment: { uid: env.uid, reference: env.config.docker_image },
            signal: ctx.cancellationSignal,
            // Per attempt: a retry after a worker died mid-pull says what it did itself.
            say: (message) =>
              note(runId, turn, `image-${++notices}-t${turn}-${ctx.info.activityId}-a${ctx.info.attempt}`, message),
          });
          image = { reference: env.config.docker_image, digest };
        }
        // Environments saved before the operator set GIT_ALLOWED_OWNERS are held to it here,
        // before the git host is asked anything, whether the workspace is cloned or restored.
        for (const repo of env?.config.github_repos ?? []) assertOwnerAllowed(repo.owner, `${repo.owner}/${repo.repo}`);
        const snapshot = env?.config.setup_snapshot
          ? await snapshots.plan({
              runId,
              turn,
              processes,
              env,
              image,
              stillCurrent: async () => (await readFile(workspaceIdFile(runId), 'utf8')) === workspaceId,
            })
          : undefined;
        if (await restoreRunFiles(runId, turn, image)) {
          if (env) await recordEnvironmentSkills(runId, env);
          await restoreBaseCommits(runId);
        } else {
          if (env && (await snapshot?.restore())) {
            await markEnvironmentSetupFailed(dataSource.manager, env.uid, false);
            await recordEnvironmentSkills(runId, env);
          } else {
            await cloneAndSetUp(runId, turn, env, processes, dir, image);
            await snapshot?.save();
          }
          const repos = workspaceRepositories(dir);
          await writeAttachments(runId, processes, repos);
          await recordBaseCommits(runId, processes, repos);
          // The run's first checkpoint: the workspace as provisioned, before the agent's first step.
          await checkpointStep(runId, turn, 0);
        }
        await mkdir(path.dirname(provisionedMarker(runId)), { recursive: true });
        await writeFile(provisionedMarker(runId), workspaceId);
        return { workspaceQueue, workspaceId };
      });
    },
  };
}
