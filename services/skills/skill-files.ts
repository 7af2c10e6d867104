import { parseYamlSource } from '../../core/factory-tree/yaml-source';

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
  const meta = parseYamlSource(match[1]!, 2);
  if (!meta.ok) {
    const { position, message } = meta.errors[0]!;
    throw new SkillFormatError(
      `${where} has invalid front matter: line ${position.line}, column ${position.column}: ${message}`,
    );
  }
  const { name, description } = (meta.value ?? {}) as { name?: unknown; description?: unknown };
  if (typeof name !== 'string' || !name.trim())
    throw new SkillFormatError(`${where} has no \`name\` in its front matter`);
  if (typeof description !== 'string' || !description.trim()) {
    throw new SkillFormatError(`${where} has no \`description\` in its front matter`);
  }
  return { name: name.trim(), description: description.trim(), body: match[2]!.trim(), content };
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
