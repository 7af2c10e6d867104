import type { EntityManager } from 'typeorm';

/**
 * A skill (SKILL.md) found in a repository of an environment when a run provisioned it; one that
 * could not be parsed has its `error` (and is named after its directory, with no description).
 */
export interface DiscoveredSkill {
  skillPath: string;
  name: string;
  description: string;
  basePrompt: string;
  error?: string;
}

/** Records (or refreshes) what a run found in one repository of an environment. */
export async function recordEnvironmentSkill(
  manager: EntityManager,
  environmentUid: string,
  repository: { owner: string; repo: string },
  skill: DiscoveredSkill,
): Promise<void> {
  await manager.query(
    `INSERT INTO environment_skills (environment_uid, owner, repo, skill_path, name, description, base_prompt, error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (environment_uid, owner, repo, skill_path)
     DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description, base_prompt = EXCLUDED.base_prompt,
                   error = EXCLUDED.error, discovered_at = now()`,
    [
      environmentUid,
      repository.owner,
      repository.repo,
      skill.skillPath,
      skill.name,
      skill.description,
      skill.basePrompt,
      skill.error ?? null,
    ],
  );
}
