import type { Environment } from '../../db/environment-reads';
import { recordEnvironmentSkill } from '../../db/environment-skills';
import type { ActivityDeps } from '../deps';
import { runProcesses } from '../sandbox/sandboxed-process';
import { workspaceFiles } from '../sandbox/workspace-files';
import { discoverSkillFiles } from '../skills/discover-skills';

/** Records the skills of the environment's repositories, and the SKILL.md files that could not be parsed. */
export function createRecordEnvironmentSkills({ dataSource, sandbox }: ActivityDeps) {
  return recordEnvironmentSkills;

  async function recordEnvironmentSkills(runId: string, env: Environment) {
    const files = workspaceFiles(runProcesses(sandbox, runId));
    for (const repo of env.config.github_repos ?? []) {
      const { skills, malformed } = await discoverSkillFiles(files, repo.repo);
      for (const skill of skills) {
        await recordEnvironmentSkill(dataSource.manager, env.uid, repo, { ...skill, basePrompt: skill.body });
      }
      for (const { skillPath, name, error } of malformed) {
        await recordEnvironmentSkill(dataSource.manager, env.uid, repo, {
          skillPath,
          name,
          description: '',
          basePrompt: '',
          error,
        });
      }
    }
  }
}
