import type { EntityManager } from 'typeorm';
import type { RunState } from '../core/run-state';
import type { ResolvedAgentConfig } from '../core/run-types';

/** What an agent step reads of its run. */
export interface StepRun {
  state: RunState;
  turn: number;
  /** Follow-ups recorded and not yet delivered to the conversation. */
  pending_followups: number;
  config: ResolvedAgentConfig & { max_steps?: number; max_tokens?: number };
  team_id: string;
  total_tokens: string;
  advertised_skills: (AdvertisedSkillRow & Record<string, unknown>)[] | null;
  factory_uid: string | null;
  executor_uid: string | null;
  agent_skill: { bundled_skill_id?: string } | null;
  /** The bundled skills its agent has loaded with read_skill (its `skill_load` entries). */
  loaded_bundled_skills: string[];
}

export interface AdvertisedSkillRow {
  name: string;
  description: string;
  bundled_skill_id?: string;
  skill_path?: string;
}

export async function loadStepRun(manager: EntityManager, runId: string): Promise<StepRun | undefined> {
  const [run] = (await manager.query(
    `SELECT config, team_id, total_tokens, advertised_skills, factory_uid, executor_uid, agent_skill, state, turn,
            (SELECT count(*)::int FROM followups f WHERE f.run_id = r.run_id AND f.delivered_at IS NULL) AS pending_followups,
            ARRAY(SELECT DISTINCT e.payload->'input'->>'bundled_skill_id' FROM run_events e
                   WHERE e.run_id = r.run_id AND e.kind = 'skill_load' 
                     AND e.payload->'input'->>'bundled_skill_id' IS NOT NULL)
              AS loaded_bundled_skills
       FROM runs r WHERE run_id = $1`,
    [runId],
  )) as StepRun[];
  return run;
}

/** What provisioning a run's workspace reads of the run. */
export interface ProvisionedRun {
  config: ResolvedAgentConfig;
  team_id: string;
  factory_uid: string | null;
}

export async function loadProvisionedRun(manager: EntityManager, runId: string): Promise<ProvisionedRun | undefined> {
  const [run] = (await manager.query(`SELECT config, team_id, factory_uid FROM runs WHERE run_id = $1`, [
    runId,
  ])) as ProvisionedRun[];
  return run;
}

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
