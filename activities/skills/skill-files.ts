import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

/** Where repositories keep skills, in the order they are searched. */
export const SKILL_DIRS = ['.agents/skills', '.warp/skills', '.claude/skills', '.codex/skills', 'skills'] as const;

export interface SkillFile {
  name: string;
  description: string;
  /** The markdown body without the front matter. */
  body: string;
  /** The whole file, as the agent reads it. */
  content: string;
}

export class SkillFormatError extends Error {
  override name = 'SkillFormatError';
}

/** Parses an Agent Skills SKILL.md: YAML front matter with `name` and `description`, then markdown. */
export function parseSkillFile(content: string, where: string): SkillFile {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(content);
  if (!match) throw new SkillFormatError(`${where} has no YAML front matter (--- name/description ---)`);
  let meta: unknown;
  try {
    meta = parseYaml(match[1]!);
  } catch (err) {
    throw new SkillFormatError(`${where} has invalid front matter: ${(err as Error).message}`);
  }
  const { name, description } = (meta ?? {}) as { name?: unknown; description?: unknown };
  if (typeof name !== 'string' || !name.trim())
    throw new SkillFormatError(`${where} has no \`name\` in its front matter`);
  if (typeof description !== 'string' || !description.trim()) {
    throw new SkillFormatError(`${where} has no \`description\` in its front matter`);
  }
  return { name: name.trim(), description: description.trim(), body: match[2]!.trim(), content };
}

export interface DiscoveredSkill extends SkillFile {
  /** Path of SKILL.md inside its repository. */
  skillPath: string;
  repoDir: string;
}

/** Every `<dir>/<name>/SKILL.md` under the known skill directories of a repository. */
export function discoverSkills(repoDir: string): DiscoveredSkill[] {
  const found: DiscoveredSkill[] = [];
  const seen = new Set<string>();
  for (const dir of SKILL_DIRS) {
    const abs = path.join(repoDir, dir);
    if (!existsSync(abs) || !statSync(abs).isDirectory()) continue;
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const skillPath = `${dir}/${entry.name}/SKILL.md`;
      const file = path.join(repoDir, skillPath);
      if (!entry.isDirectory() || !existsSync(file)) continue;
      try {
        const skill = parseSkillFile(readFileSync(file, 'utf8'), skillPath);
        if (seen.has(skill.name)) continue;
        seen.add(skill.name);
        found.push({ ...skill, skillPath, repoDir });
      } catch {
        // A malformed skill is skipped in discovery; naming it explicitly reports the problem.
      }
    }
  }
  return found;
}

export interface SkillSpec {
  owner: string;
  repo: string;
  /** `skill-name`, or a path ending in SKILL.md. */
  target: string;
  isPath: boolean;
}

export function parseSkillSpec(spec: string): SkillSpec {
  const [repoPart, target] = [spec.slice(0, spec.indexOf(':')), spec.slice(spec.indexOf(':') + 1)];
  const [owner, repo] = repoPart.split('/') as [string, string];
  return { owner, repo, target, isPath: target.endsWith('SKILL.md') };
}

export class SkillNotFoundError extends Error {
  override name = 'SkillNotFoundError';
}

/** Finds the skill a spec names inside a checked-out repository; the error says where it looked. */
export function findSkillInRepo(repoDir: string, spec: SkillSpec, specText: string): DiscoveredSkill {
  const candidates = spec.isPath ? [spec.target] : SKILL_DIRS.map((d) => `${d}/${spec.target}/SKILL.md`);
  for (const skillPath of candidates) {
    const file = path.resolve(repoDir, skillPath);
    if (!file.startsWith(path.resolve(repoDir) + path.sep)) continue;
    if (existsSync(file) && statSync(file).isFile()) {
      return { ...parseSkillFile(readFileSync(file, 'utf8'), `${specText}`), skillPath, repoDir };
    }
  }
  throw new SkillNotFoundError(
    `Skill ${specText} not found: looked for ${candidates.join(', ')} in ${spec.owner}/${spec.repo}.`,
  );
}
