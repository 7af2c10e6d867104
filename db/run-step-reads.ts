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
