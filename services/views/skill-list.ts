import type { TeamSkillRow } from '../../db/environment-skill-reads';

export interface SkillVariant {
  id: string;
  description: string;
  base_prompt: string;
  source: { owner: string; name: string; skill_path: string };
  environments: { uid: string; name: string }[];
  last_run_timestamp: string | null;
  /** Why the SKILL.md could not be parsed; only on a malformed one. */
  error?: string;
}

/**
 * `GET /agent`: the team's skills as the official clients read them, one agent per name with a
 * variant per SKILL.md (`owner/repo:path`) naming every environment it was found in; by name
 * (as the rows come), or the most recently run first.
 */
export function toSkillList(rows: TeamSkillRow[], sortBy: 'name' | 'last_run' = 'name') {
  const agents = new Map<string, { name: string; variants: Map<string, SkillVariant>; lastRun: number }>();
  for (const row of rows) {
    const agent = agents.get(row.name) ?? { name: row.name, variants: new Map(), lastRun: 0 };
    agents.set(row.name, agent);
    const id = `${row.owner}/${row.repo}:${row.skill_path}`;
    const variant = agent.variants.get(id) ?? {
      id,
      description: row.description,
      base_prompt: row.base_prompt,
      source: { owner: row.owner, name: row.repo, skill_path: row.skill_path },
      environments: [],
      last_run_timestamp: row.last_run ? row.last_run.toISOString() : null,
      ...(row.error !== null ? { error: row.error } : {}),
    };
    variant.environments.push({ uid: row.environment_uid, name: row.environment_name });
    agent.variants.set(id, variant);
    agent.lastRun = Math.max(agent.lastRun, row.last_run?.getTime() ?? 0);
  }
  const list = [...agents.values()];
  if (sortBy === 'last_run') list.sort((a, b) => b.lastRun - a.lastRun || a.name.localeCompare(b.name));
  return { agents: list.map((a) => ({ name: a.name, variants: [...a.variants.values()] })) };
}
