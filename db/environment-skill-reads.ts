import type { EntityManager } from 'typeorm';

/** A skill of one of the team's environments, with when the team last ran it. */
export interface TeamSkillRow {
  name: string;
  description: string;
  base_prompt: string;
  owner: string;
  repo: string;
  skill_path: string;
  environment_uid: string;
  environment_name: string;
  last_run: Date | null;
  /** Why the SKILL.md could not be parsed; null for a skill. */
  error: string | null;
}

/**
 * The skills found in the team's environments (of repository `owner/repo` when given, in any
 * case; with the malformed ones when asked), by name. `last_run` reads one entry of
 * runs_team_skill_created per skill.
 */
export async function listTeamSkills(
  manager: EntityManager,
  teamId: string,
  options: { repository?: string; includeMalformed?: boolean },
): Promise<TeamSkillRow[]> {
  return (await manager.query(
    `SELECT s.name, s.description, s.base_prompt, s.owner, s.repo, s.skill_path, s.error, e.uid AS environment_uid,
            e.name AS environment_name,
            (SELECT r.created_at FROM runs r
              WHERE r.team_id = e.team_id AND r.skill_spec = s.owner || '/' || s.repo || ':' || s.skill_path
              ORDER BY r.created_at DESC LIMIT 1) AS last_run
       FROM environment_skills s JOIN environments e ON e.uid = s.environment_uid
      WHERE e.team_id = $1 AND e.deleted_at IS NULL
        AND ($2::text IS NULL OR lower(s.owner || '/' || s.repo) = lower($2::text))
        AND (s.error IS NULL OR $3::boolean)
      ORDER BY s.name, s.owner, s.repo, s.skill_path`,
    [teamId, options.repository ?? null, options.includeMalformed ?? false],
  )) as TeamSkillRow[];
}
