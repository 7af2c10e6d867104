import type { EntityManager } from 'typeorm';

/**
 * Records what resolving a run's skills and MCP servers found: the skills it advertises, the skill
 * it runs (its base prompt added to the config's), and the name the run takes from it.
 */
export async function recordResolvedSkills(
  manager: EntityManager,
  runId: string,
  resolved: { advertised: unknown[]; agentSkill: unknown; name: string | null; basePrompt: string | null },
): Promise<void> {
  await manager.query(
    `UPDATE runs SET advertised_skills = $2::jsonb,
            agent_skill = COALESCE($3::jsonb, agent_skill),
            config = CASE WHEN $4::text IS NULL THEN config ELSE config || jsonb_build_object('name', $4::text) END
                    || CASE WHEN $5::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('base_prompt', $5::text) END,
            name = COALESCE(name, $4::text)
      WHERE run_id = $1`,
    [
      runId,
      JSON.stringify(resolved.advertised),
      resolved.agentSkill ? JSON.stringify(resolved.agentSkill) : null,
      resolved.name,
      resolved.basePrompt,
    ],
  );
}
