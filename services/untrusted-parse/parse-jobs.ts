import { checkFactoryFile, type FactoryFileCheck } from '../../core/factory-file';
import { validateFactoryTree, type TreeFile, type TreeValidationResult } from '../../core/factory-tree/validate-tree';
import { modelProblemAmong } from '../platform/model-list';
import { isSkillSpecAllowed } from '../skills/bundled-skills';
import { parseSkillFile, SkillFormatError, type SkillFile } from '../skills/skill-files';

/** Whom GIT_ALLOWED_OWNERS allows (lower-case; absent: every owner), as data: a predicate cannot cross to the child. */
interface AllowedOwners {
  gitAllowedOwners?: readonly string[];
}

/**
 * What the parse child does (parse-child.ts): each job takes and returns plain data, so
 * everything a caller needs, the places of diagnostics too, is worked out in the child.
 */
export const PARSE_JOBS = {
  validateFactoryTree: ({ files, gitAllowedOwners }: AllowedOwners & { files: TreeFile[] }): TreeValidationResult =>
    validateFactoryTree(files, (spec) => isSkillSpecAllowed(gitAllowedOwners, spec)),

  checkFactoryFile: ({
    content,
    path,
    gitAllowedOwners,
    servedModels,
  }: AllowedOwners & { content: string; path?: string; servedModels?: readonly string[] }): FactoryFileCheck =>
    checkFactoryFile(
      content,
      path,
      (spec) => isSkillSpecAllowed(gitAllowedOwners, spec),
      (modelId) => (servedModels ? modelProblemAmong(servedModels, modelId) : undefined),
    ),

  parseSkillFile: ({ content, where }: { content: string; where: string }): ParsedSkillFile => {
    try {
      return { ok: true, skill: parseSkillFile(content, where) };
    } catch (err) {
      if (err instanceof SkillFormatError) return { ok: false, message: err.message };
      throw err;
    }
  },
};

export type ParsedSkillFile = { ok: true; skill: SkillFile } | { ok: false; message: string };

export type ParseJobs = typeof PARSE_JOBS;
