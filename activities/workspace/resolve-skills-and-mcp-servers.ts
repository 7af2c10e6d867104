import path from 'node:path';
import { Context } from '@temporalio/activity';
import { isCliHarness } from '../../core/harnesses';
import { appendRunEvent } from '../../db/run-events';
import { recordResolvedSkills } from '../../db/run-resolved-skills';
import {
  BUNDLED_SKILL_OWNER,
  BUNDLED_SKILL_REPO,
  bundledSkills,
  FACTORY_MCP_SKILL,
  findBundledSkill,
} from '../../services/skills/bundled-skills';
import { parseSkillSpec, SkillFormatError, SkillNotFoundError } from '../../services/skills/skill-files';
import type { ActivityDeps } from '../deps';
import { withHeartbeat } from '../heartbeat';
import { loadRunNetworkPolicy } from '../sandbox/run-network-policy';
import { runProcesses } from '../sandbox/sandboxed-process';
import { workspaceFiles } from '../sandbox/workspace-files';
import { discoverSkills, findSkillInRepo } from '../skills/discover-skills';
import type { AdvertisedSkill } from '../tools/builtin-tools';
import { McpServerError } from '../tools/mcp-sessions';
import { userFailure } from '../user-failure';
import { cloneRepository, CloneError, repositoryUrl, workspaceRepositories } from './git';
import type { WorkspaceContext } from './workspace-context';
import { workspaceDir } from './workspace-paths';

export function createResolveSkillsAndMcpServers(
  { dataSource, config, mcpSessions, sandbox }: ActivityDeps,
  { root, auth, assertOwnerAllowed, loadRun }: WorkspaceContext,
) {
  return {
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
        const harness = run.config.harness?.type;
        // A CLI harness starts the run's MCP servers itself, in the sandbox, from its own configuration.
        if (Object.keys(servers).length && !isCliHarness(harness)) {
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
              model_id: isCliHarness(harness)
                ? `${harness}/${run.config.harness?.model_id || 'default'}`
                : run.config.model_id,
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
  };
}
