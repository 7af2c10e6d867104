import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { WorkspaceFiles } from '../sandbox/workspace-files';

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
  /** The repository, relative to the workspace. */
  repoDir: string;
}

/** Every `<dir>/<name>/SKILL.md` under the known skill directories of a workspace repository. */
export async function discoverSkills(files: WorkspaceFiles, repoDir: string): Promise<DiscoveredSkill[]> {
  const found: DiscoveredSkill[] = [];
  const seen = new Set<string>();
  for (const { skillPath, content } of await files.skillFiles(repoDir, SKILL_DIRS)) {
    try {
      const skill = parseSkillFile(content, skillPath);
      if (seen.has(skill.name)) continue;
      seen.add(skill.name);
      found.push({ ...skill, skillPath, repoDir });
    } catch {
      // A malformed skill is skipped in discovery; naming it explicitly reports the problem.
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
export async function findSkillInRepo(
  files: WorkspaceFiles,
  repoDir: string,
  spec: SkillSpec,
  specText: string,
): Promise<DiscoveredSkill> {
  const candidates = spec.isPath ? [spec.target] : SKILL_DIRS.map((d) => `${d}/${spec.target}/SKILL.md`);
  for (const skillPath of candidates) {
    if (path.posix.normalize(skillPath).startsWith('..')) continue;
    const content = await files.read(path.posix.join(repoDir, skillPath), 1024 * 1024).catch(() => undefined);
    if (content !== undefined) return { ...parseSkillFile(content, specText), skillPath, repoDir };
  }
  throw new SkillNotFoundError(
    `Skill ${specText} not found: looked for ${candidates.join(', ')} in ${spec.owner}/${spec.repo}.`,
  );
}
