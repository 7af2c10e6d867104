import type { WorkspaceFiles } from '../sandbox/workspace-files';
import path from 'node:path';
import {
  SKILL_DIRS,
  SkillFormatError,
  SkillNotFoundError,
  type SkillFile,
  type SkillSpec,
} from '../../services/skills/skill-files';
import { parseUntrustedSkillFile } from '../../services/untrusted-parse/untrusted-parser';

export interface DiscoveredSkill extends SkillFile {
  /** Path of SKILL.md inside its repository. */
  skillPath: string;
  /** The repository, relative to the workspace. */
  repoDir: string;
}

/** A SKILL.md that could not be parsed: named after its directory, with why. */
export interface MalformedSkill {
  skillPath: string;
  name: string;
  error: string;
}

/** Every `<dir>/<name>/SKILL.md` under the known skill directories of a workspace repository. */
export async function discoverSkills(files: WorkspaceFiles, repoDir: string): Promise<DiscoveredSkill[]> {
  return (await discoverSkillFiles(files, repoDir)).skills;
}

/**
 * Every `<dir>/<name>/SKILL.md` of a repository: the skills (the first of each name), and the files
 * that could not be parsed (skipped when skills are offered; naming one explicitly reports it).
 */
export async function discoverSkillFiles(
  files: WorkspaceFiles,
  repoDir: string,
): Promise<{ skills: DiscoveredSkill[]; malformed: MalformedSkill[] }> {
  const skills: DiscoveredSkill[] = [];
  const malformed: MalformedSkill[] = [];
  const seen = new Set<string>();
  for (const { skillPath, content } of await files.skillFiles(repoDir, SKILL_DIRS)) {
    try {
      const skill = await parseUntrustedSkillFile(content, skillPath);
      if (seen.has(skill.name)) continue;
      seen.add(skill.name);
      skills.push({ ...skill, skillPath, repoDir });
    } catch (err) {
      if (!(err instanceof SkillFormatError)) throw err;
      malformed.push({ skillPath, name: path.posix.basename(path.posix.dirname(skillPath)), error: err.message });
    }
  }
  return { skills, malformed };
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
    if (content !== undefined) return { ...(await parseUntrustedSkillFile(content, specText)), skillPath, repoDir };
  }
  throw new SkillNotFoundError(
    `Skill ${specText} not found: looked for ${candidates.join(', ')} in ${spec.owner}/${spec.repo}.`,
  );
}
