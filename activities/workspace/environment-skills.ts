import type { Environment } from '../../db/environments';
import { recordEnvironmentSkill } from '../../db/environment-skills';
import type { ActivityDeps } from '../deps';
import { runProcesses } from '../sandbox/sandboxed-process';
import { workspaceFiles } from '../sandbox/workspace-files';
import { discoverSkills } from '../skills/discover-skills';

export function createRecordEnvironmentSkills({ dataSource, sandbox }: ActivityDeps) {
  return recordEnvironmentSkills;

  async function recordEnvironmentSkills(runId: string, env: Environment) {
    const files = workspaceFiles(runProcesses(sandbox, runId));
    for (const repo of env.config.github_repos ?? []) {
      for (const skill of await discoverSkills(files, repo.repo)) {
        await recordEnvironmentSkill(dataSource.manager, env.uid, repo, { ...skill, basePrompt: skill.body });
      }
    }
  }
}
