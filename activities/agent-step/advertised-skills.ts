import { findBundledSkill } from '../../services/skills/bundled-skills';
import type { StepRun } from '../../db/run-step-reads';
import type { WorkspaceFiles } from '../sandbox/workspace-files';
import type { AdvertisedSkill } from '../tools/builtin-tools';

/** The skills offered to the agent, with their content (bundled, or read from the workspace). */
export async function loadAdvertisedSkills(run: StepRun, files: WorkspaceFiles): Promise<AdvertisedSkill[]> {
  const skills: AdvertisedSkill[] = [];
  for (const row of run.advertised_skills ?? []) {
    if (row.bundled_skill_id) {
      const bundled = findBundledSkill(row.bundled_skill_id);
      if (bundled) {
        skills.push({
          name: row.name,
          description: row.description,
          content: bundled.content,
          source: { bundled_skill_id: bundled.id },
        });
      }
    } else if (row.skill_path) {
      const content = await files.read(row.skill_path, 1024 * 1024).catch(() => undefined);
      if (content !== undefined) {
        skills.push({
          name: row.name,
          description: row.description,
          content,
          source: { skill_path: row.skill_path },
        });
      }
    }
  }
  return skills;
}
