import { existsSync } from 'node:fs';
import { findWorkspaceHolder, recordWorkspaceHolder } from '../db/run-workspaces';
import { loadProvisionedRun, recordResolvedSkills, type ProvisionedRun } from '../db/run-step-reads';
import { workspaceRootOf } from './workspace/workspace-root';
import { removeRunWorkspace } from './workspace/remove-workspace';
import { exceeded as diskExceeded, runDiskQuota } from './sandbox/run-disk';
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ATTACHMENTS_DIR } from '../core/attachments';
import { isGitOwnerAllowed } from '../core/git-owners';
import { loadRunAttachments } from '../db/attachments';
import { findEnvironment, markEnvironmentSetupFailed, type Environment } from '../db/environments';
import { appendRunEvent } from '../db/run-events';
import { RunFailureType, type UserFailureDetails } from '../workflows/run-contract';
import type { ActivityDeps } from './deps';
import { recordEnvironmentFactories } from './factories/discover-factories';
import { networkRefusalNotes } from './sandbox/network-notes';
import { runProcesses, type RunProcesses } from './sandbox/sandboxed-process';
import { workspaceFiles } from './sandbox/workspace-files';
import {
  BUNDLED_SKILL_OWNER,
  BUNDLED_SKILL_REPO,
  bundledSkills,
  FACTORY_MCP_SKILL,
  findBundledSkill,
} from '../services/skills/bundled-skills';
import { discoverSkills, findSkillInRepo } from './skills/discover-skills';
import { parseSkillSpec, SkillFormatError, SkillNotFoundError } from '../services/skills/skill-files';
import type { AdvertisedSkill } from './tools/builtin-tools';
import { McpServerError } from './tools/mcp-sessions';
import {
  cloneRepository,
  CloneError,
  initRepository,
  repositoryUrl,
  resolveCommit,
  scrubSecret,
  workspaceRepositories,
} from './workspace/git';
import { loadRunNetworkPolicy, runNetworkPolicy } from './sandbox/run-network-policy';
import {
  baseCommitsFile,
  provisionedMarker as provisionedMarkerOf,
  workspaceDir,
  workspaceIdFile as workspaceIdFileOf,
} from './workspace/workspace-paths';
import { recordEnvironmentSkill } from '../db/environment-skills';

const SETUP_OUTPUT_TAIL = 2000;

export function userFailure(message: string, errorCode: UserFailureDetails['errorCode']): ApplicationFailure {
  const details: UserFailureDetails = { errorCode };
  return ApplicationFailure.nonRetryable(message, RunFailureType.USER_FAILURE, details);
}

/** Beats every second while `work` runs, so cancellation and a dead worker are noticed quickly. */
export async function withHeartbeat<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 1000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Workspace activities: provisioning runs on any worker and returns the task queue of the worker
 * that now holds the workspace; everything else that touches the workspace runs there.
 */
export function createWorkspaceActivities({ dataSource, config, workspaceQueue, mcpSessions, sandbox }: ActivityDeps) {
  const root = config.workspace.dir;
  const workerId = config.worker.id;
  const workspaceRoot = workspaceRootOf(config.workspace.dir);
  const auth = { token: config.workspace.gitToken };
  const provisionedMarker = (runId: string) => provisionedMarkerOf(root, runId);
  const workspaceIdFile = (runId: string) => workspaceIdFileOf(root, runId);

  function assertOwnerAllowed(owner: string, what: string) {
    if (isGitOwnerAllowed(config.workspace.gitAllowedOwners, owner)) return;
    throw userFailure(
      `${what} is not allowed: this service's GIT_ALLOWED_OWNERS does not include ${owner}.`,
      'not_authorized',
    );
  }

  async function loadRun(runId: string): Promise<ProvisionedRun> {
    return (await loadProvisionedRun(dataSource.manager, runId))!;
  }

  async function note(runId: string, turn: number, key: string, message: string) {
    await dataSource.transaction((tx) =>
      appendRunEvent(tx, { runId, eventKey: key, kind: 'notice', turn, payload: { message } }),
    );
  }

  /** `attemptKey` tells provisionings of one turn apart, so a re-provision's output is kept too. */
  async function runSetupCommands(
    runId: string,
    turn: number,
    attemptKey: string,
    env: Environment,
    dir: string,
    signal: AbortSignal,
  ) {
    const commands = env.config.setup_commands ?? [];
    const policy = runNetworkPolicy(config, env);
    const disk = runDiskQuota(sandbox.runPaths(runId), config.sandbox.workspaceMaxBytes);
    for (const [index, command] of commands.entries()) {
      const result = await runProcesses(sandbox, runId).runCommand({
        command,
        policy,
        timeoutMs: config.workspace.setupCommandTimeoutSeconds * 1000,
        signal,
        keepBytes: 256 * 1024,
        disk,
      });
      if (result.diskLimitExceeded !== undefined) {
        const err = diskExceeded(result.diskLimitExceeded, disk.maxBytes);
        throw userFailure(
          `Setup command ${index + 1} of environment ${env.uid} (\`${command}\`): ${err.message}`,
          'budget_exceeded',
        );
      }
      if (result.cancelled) throw new Error('setup cancelled');
      const output = scrubSecret(result.output, auth.token) + networkRefusalNotes(result.refusals);
      await dataSource.transaction((tx) =>
        appendRunEvent(tx, {
          runId,
          eventKey: `setup-t${turn}-${attemptKey}-${index}`,
          kind: 'command',
          turn,
          payload: {
            phase: 'setup',
            command,
            exit_code: result.exitCode,
            duration_ms: result.durationMs,
            output,
            timed_out: result.timedOut,
            ...(result.refusals.length ? { network_refusals: result.refusals } : {}),
          },
        }),
      );
      if (result.timedOut || result.exitCode !== 0) {
        await markEnvironmentSetupFailed(dataSource.manager, env.uid, true);
        const why = result.timedOut
          ? `timed out after ${config.workspace.setupCommandTimeoutSeconds}s`
          : `exited with ${result.exitCode ?? result.signal}`;
        throw userFailure(
          `Setup command ${index + 1} of environment ${env.uid} (\`${command}\`) ${why}. Output ends with:\n${output.slice(-SETUP_OUTPUT_TAIL)}`,
          'environment_setup_failed',
        );
      }
    }
    await markEnvironmentSetupFailed(dataSource.manager, env.uid, false);
  }

  async function recordEnvironmentSkills(runId: string, env: Environment) {
    const files = workspaceFiles(runProcesses(sandbox, runId));
    for (const repo of env.config.github_repos ?? []) {
      for (const skill of await discoverSkills(files, repo.repo)) {
        await recordEnvironmentSkill(dataSource.manager, env.uid, repo, { ...skill, basePrompt: skill.body });
      }
    }
  }

  /**
   * Writes the run's attachments into `attachments/` of the workspace, through the sandbox like
   * every file the run sees; a workspace that is itself a repository leaves them out of its diffs.
   */
  async function writeAttachments(runId: string, processes: RunProcesses, repos: string[]) {
    const attachments = await loadRunAttachments(dataSource.manager, runId);
    if (!attachments.length) return;
    const files = workspaceFiles(processes);
    for (const a of attachments) await files.writeBytes(`${ATTACHMENTS_DIR}/${a.fileName}`, a.bytes);
    if (repos.includes('')) {
      const exclude = '.git/info/exclude';
      const current = await files.read(exclude).catch(() => '');
      if (!current.split('\n').includes(`/${ATTACHMENTS_DIR}/`)) {
        await files.write(exclude, `${current}${current && !current.endsWith('\n') ? '\n' : ''}/${ATTACHMENTS_DIR}/\n`);
      }
    }
  }

  /** Records the commit every repository of the fresh workspace starts from (the handoff patch's base). */
  async function recordBaseCommits(runId: string, processes: RunProcesses, repos: string[]) {
    const commits: Record<string, string> = {};
    for (const repo of repos) {
      const commit = await resolveCommit(processes, repo, 'HEAD');
      if (commit) commits[repo] = commit;
    }
    const file = baseCommitsFile(root, runId);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify(commits));
  }

  return {
    /** Makes the run's workspace on this worker: clones the environment's repositories, runs its setup. */
    async provisionEnvironment({
      runId,
      turn,
      reason,
    }: {
      runId: string;
      turn: number;
      reason?: string;
    }): Promise<{ workspaceQueue: string; workspaceId: string }> {
      const ctx = Context.current();
      return withHeartbeat(async () => {
        const run = await loadRun(runId);
        const dir = workspaceDir(root, runId);
        const kept = existsSync(provisionedMarker(runId)) && existsSync(dir);
        if (!reason && kept) {
          return { workspaceQueue, workspaceId: await readFile(provisionedMarker(runId), 'utf8') };
        }
        if (reason) {
          // Given up because its worker stopped renewing its lease. When that worker is this one,
          // back with the workspace it kept, and no other worker has taken the run over, it
          // carries on there; otherwise the run starts afresh here.
          const holder = await findWorkspaceHolder(dataSource.manager, runId);
          const localId = kept ? await readFile(provisionedMarker(runId), 'utf8') : undefined;
          if (holder?.workspaceQueue === workspaceQueue && holder.workspaceId === localId) {
            // A new id: the removal the workflow left for the abandoned workspace names the old one.
            const workspaceId = randomUUID();
            await writeFile(workspaceIdFile(runId), workspaceId);
            await writeFile(provisionedMarker(runId), workspaceId);
            await recordWorkspaceHolder(dataSource.manager, runId, {
              workerId,
              workspaceQueue,
              workspaceId,
              workspaceRoot,
            });
            await note(
              runId,
              turn,
              `reattach-t${turn}-${ctx.info.activityId}`,
              `The worker that held the workspace (${workerId}) came back before any other worker took the run over: the run carries on in the same workspace.`,
            );
            return { workspaceQueue, workspaceId };
          }
          await note(
            runId,
            turn,
            `reprovision-t${turn}-${ctx.info.activityId}`,
            `${reason} The new workspace is on worker ${workerId}.`,
          );
        }
        const workspaceId = randomUUID();
        await rm(provisionedMarker(runId), { force: true });
        await mkdir(path.dirname(workspaceIdFile(runId)), { recursive: true });
        // Recorded before the work: from now on every worker's sweep knows whose it is.
        await recordWorkspaceHolder(dataSource.manager, runId, {
          workerId,
          workspaceQueue,
          workspaceId,
          workspaceRoot,
        });
        await writeFile(workspaceIdFile(runId), workspaceId);
        await sandbox.destroyRun(runId);
        await sandbox.prepareRun(runId);
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
        if (env) {
          for (const repo of env.config.github_repos ?? []) {
            // Environments saved before the operator set GIT_ALLOWED_OWNERS are held to it here.
            assertOwnerAllowed(repo.owner, `${repo.owner}/${repo.repo}`);
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
            ? `Workspace on ${ctx.info.taskQueue === workspaceQueue ? 'this' : 'worker'} ${workspaceQueue}: cloned ${(env.config.github_repos ?? []).map((r) => `${r.owner}/${r.repo}`).join(', ') || 'no repositories'} for environment ${env.config.name} (${env.uid}).`
            : `Workspace on worker ${workspaceQueue}: no environment, an empty git repository.`,
        );
        if (env) {
          // As committed: before setup commands can change the files.
          await recordEnvironmentFactories({
            dataSource,
            files: workspaceFiles(processes),
            env,
            gitAllowedOwners: config.workspace.gitAllowedOwners,
            runId,
            turn,
            attemptKey: ctx.info.activityId,
          });
          await runSetupCommands(runId, turn, ctx.info.activityId, env, dir, ctx.cancellationSignal);
          await recordEnvironmentSkills(runId, env);
        }
        const repos = workspaceRepositories(dir);
        await writeAttachments(runId, processes, repos);
        await recordBaseCommits(runId, processes, repos);
        await mkdir(path.dirname(provisionedMarker(runId)), { recursive: true });
        await writeFile(provisionedMarker(runId), workspaceId);
        return { workspaceQueue, workspaceId };
      });
    },

    /**
     * Resolves the run's skill (its base prompt), the skills it advertises and its MCP servers,
     * on the worker that holds the workspace. Returns the skill's name for the run's label.
     */
    async resolveSkillsAndMcpServers({ runId, turn }: { runId: string; turn: number }): Promise<{ name?: string }> {
      const ctx = Context.current();
      return withHeartbeat(async () => {
        const run = await loadRun(runId);
        const dir = workspaceDir(root, runId);
        const files = workspaceFiles(runProcesses(sandbox, runId));
        // `factory-mcp` teaches the orchestration tools, which only a factory's agents have.
        const bundled = bundledSkills().filter((s) => s.id !== FACTORY_MCP_SKILL || run.factory_uid);
        const advertised: AdvertisedSkill[] = bundled.map((s) => ({
          name: s.id,
          description: s.description,
          content: s.content,
          source: { bundled_skill_id: s.id },
        }));
        for (const repo of workspaceRepositories(dir)) {
          for (const s of await discoverSkills(files, repo)) {
            const rel = path.posix.join(repo, s.skillPath);
            if (!advertised.some((a) => a.name === s.name))
              advertised.push({
                name: s.name,
                description: s.description,
                content: s.content,
                source: { skill_path: rel },
              });
          }
        }

        /** A skill named by spec: bundled, in a workspace repository, or cloned for it. */
        const loadSkill = async (spec: string) => {
          const parsed = parseSkillSpec(spec);
          try {
            if (parsed.owner === BUNDLED_SKILL_OWNER && parsed.repo === BUNDLED_SKILL_REPO) {
              const skill = findBundledSkill(parsed.target.replace(/\/SKILL\.md$/, ''));
              if (!skill) {
                throw new SkillNotFoundError(
                  `Skill ${spec} not found: the bundled skills are ${bundledSkills()
                    .map((s) => s.id)
                    .join(', ')}.`,
                );
              }
              return {
                info: { bundled_skill_id: skill.id, name: skill.name, description: skill.description },
                source: { bundled_skill_id: skill.id },
                name: skill.name,
                description: skill.description,
                content: skill.content,
              };
            }
            let repoDir = parsed.repo;
            if (!workspaceRepositories(dir).includes(parsed.repo)) {
              repoDir = path.posix.join('.skills', parsed.owner, parsed.repo);
              if (!(await files.isDirectory(repoDir))) {
                assertOwnerAllowed(parsed.owner, spec);
                await cloneRepository(
                  runProcesses(sandbox, runId),
                  repositoryUrl(config.workspace.gitBaseUrl, parsed.owner, parsed.repo),
                  repoDir,
                  auth,
                  ctx.cancellationSignal,
                );
              }
            }
            const skill = await findSkillInRepo(files, repoDir, parsed, spec);
            return {
              info: {
                name: skill.name,
                description: skill.description,
                full_path: `${parsed.owner}/${parsed.repo}/${skill.skillPath}`,
              },
              source: { skill_path: path.posix.join(repoDir, skill.skillPath) },
              name: skill.name,
              description: skill.description,
              content: skill.content,
            };
          } catch (err) {
            if (err instanceof SkillNotFoundError || err instanceof SkillFormatError || err instanceof CloneError) {
              throw userFailure(err.message, 'resource_not_found');
            }
            throw err;
          }
        };

        let agentSkill: Record<string, unknown> | null = null;
        let basePrompt: string | undefined;
        const spec = run.config.skill_spec;
        if (spec) {
          const skill = await loadSkill(spec);
          agentSkill = skill.info;
          basePrompt = skill.content;
        }
        // `config.skills` (the run's or its agent identity's): advertised like the workspace's own.
        for (const extra of run.config.skills ?? []) {
          const skill = await loadSkill(extra);
          if (!advertised.some((a) => a.name === skill.name)) {
            advertised.push({
              name: skill.name,
              description: skill.description,
              content: skill.content,
              source: skill.source,
            });
          }
        }

        let mcpTools: string[] = [];
        const servers = run.config.mcp_servers ?? {};
        if (Object.keys(servers).length) {
          try {
            const policy = await loadRunNetworkPolicy(dataSource.manager, config, {
              environmentId: run.config.environment_id,
              teamId: run.team_id,
            });
            const session = await mcpSessions.get(runId, servers, policy);
            mcpTools = session.tools.map((t) => t.spec.name);
          } catch (err) {
            if (err instanceof McpServerError) throw userFailure(err.message, 'invalid_request');
            throw err;
          }
        }

        const name = run.config.name ?? (agentSkill?.name as string | undefined);
        await dataSource.transaction(async (tx) => {
          await recordResolvedSkills(tx, runId, {
            advertised: advertised.map(({ name: n, description, source }) => ({ name: n, description, ...source })),
            agentSkill,
            name: run.config.name ? null : (name ?? null),
            basePrompt:
              basePrompt === undefined || run.config.base_prompt?.includes(basePrompt)
                ? null
                : [run.config.base_prompt, basePrompt].filter(Boolean).join('\n\n'),
          });
          await appendRunEvent(tx, {
            runId,
            eventKey: `config-t${turn}`,
            kind: 'config',
            turn,
            payload: {
              model_id: run.config.model_id,
              environment_id: run.config.environment_id,
              skill_spec: spec,
              mcp_servers: Object.keys(servers),
              mcp_tools: mcpTools,
              skills: advertised.map((a) => a.name),
            },
          });
        });
        return { name };
      });
    },

    /**
     * Removes the run's workspace from this worker (idle window over, or cancelled). With
     * `workspaceId`, only that workspace: a run provisioned again on this worker (even one being
     * provisioned right now) keeps its new one. Says whether it removed anything.
     */
    async removeWorkspace({ runId, workspaceId }: { runId: string; workspaceId?: string }): Promise<boolean> {
      if (workspaceId !== undefined) {
        const current = await readFile(workspaceIdFile(runId), 'utf8').catch(() => undefined);
        if (current !== undefined && current !== workspaceId) return false;
      }
      await removeRunWorkspace({ root, sandbox, mcpSessions }, runId);
      return true;
    },
  };
}
