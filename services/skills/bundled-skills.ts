import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isGitOwnerAllowed } from '../../core/git-owners';
import { parseSkillFile, type SkillFile } from './skill-files';

/** `skill_spec` repository that names a bundled skill, e.g. `agent-runs/bundled:svc-platform`. */
export const BUNDLED_SKILL_OWNER = 'agent-runs';
export const BUNDLED_SKILL_REPO = 'bundled';
/** Offered only to the agents of a factory. */
export const FACTORY_MCP_SKILL = 'factory-mcp';
/** Teaches `validate_factory_file`, which a run's agent has once this skill is in play. */
export const FACTORY_FILES_SKILL = 'factory-files';

const candidates = [
  path.resolve(__dirname, '..', '..', 'bundled-skills'),
  path.resolve(__dirname, '..', '..', '..', 'bundled-skills'),
];
export const BUNDLED_SKILLS_DIR = candidates.find((d) => existsSync(d)) ?? candidates[0]!;

export interface BundledSkill extends SkillFile {
  id: string;
}

let cache: BundledSkill[] | undefined;

/** The skills that ship with the product, read once from bundled-skills/<id>/SKILL.md. */
export function bundledSkills(): BundledSkill[] {
  if (cache) return cache;
  const skills: BundledSkill[] = [];
  if (existsSync(BUNDLED_SKILLS_DIR)) {
    for (const entry of readdirSync(BUNDLED_SKILLS_DIR, { withFileTypes: true })) {
      const file = path.join(BUNDLED_SKILLS_DIR, entry.name, 'SKILL.md');
      if (entry.isDirectory() && existsSync(file)) {
        skills.push({ id: entry.name, ...parseSkillFile(readFileSync(file, 'utf8'), `bundled skill ${entry.name}`) });
      }
    }
  }
  cache = skills.sort((a, b) => a.id.localeCompare(b.id));
  return cache;
}

export function findBundledSkill(id: string): BundledSkill | undefined {
  return bundledSkills().find((s) => s.id === id);
}

/** Whether GIT_ALLOWED_OWNERS (lower-case; undefined: every owner) lets a run load a skill spec; bundled skills always. */
export function isSkillSpecAllowed(allowed: readonly string[] | undefined, spec: string): boolean {
  const [owner = '', repo = ''] = spec.slice(0, spec.indexOf(':')).split('/');
  return (owner === BUNDLED_SKILL_OWNER && repo === BUNDLED_SKILL_REPO) || isGitOwnerAllowed(allowed, owner);
}
