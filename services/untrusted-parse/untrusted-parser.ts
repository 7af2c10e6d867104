import path from 'node:path';
import type { FactoryFileCheck } from '../../core/factory-file';
import type { TreeFile, TreeValidationResult } from '../../core/factory-tree/validate-tree';
import { unparsedTreeValidation } from '../../core/factory-tree/unparsed-tree';
import { createIsolatedChild, IsolatedChildError, type IsolatedChild } from '../../infra/isolated-child';
import { SkillFormatError, type SkillFile } from '../skills/skill-files';
import type { ParseJobs } from './parse-jobs';

/**
 * Factory trees, FACTORY.md and SKILL.md files from requests and repositories are parsed here:
 * in a child process of this one (parse-child.ts), so that an input that exhausts the parser's
 * heap or stack, or runs too long, costs a clear answer and a restarted child, never the
 * service. Trusted files (the bundled skills) are parsed in-process.
 */

/** How long one parse may take, and the child's heap and stack; a factory tree needs milliseconds and a few MB. */
export const PARSE_DEADLINE_MS = 10_000;
export const PARSE_CHILD_HEAP_MB = 128;
export const PARSE_CHILD_STACK_KB = 512;

/** The child's module beside this one: parse-child.ts from the sources (tsx, jest), parse-child.js in dist/. */
export const PARSE_CHILD_ENTRY = path.join(__dirname, `parse-child${path.extname(__filename)}`);

let shared: IsolatedChild | undefined;

/** This process's parse child (API and worker alike): one, started at its first job. */
export function parseChild(): IsolatedChild {
  shared ??= createIsolatedChild({
    entry: PARSE_CHILD_ENTRY,
    deadlineMs: PARSE_DEADLINE_MS,
    maxOldSpaceMb: PARSE_CHILD_HEAP_MB,
    stackSizeKb: PARSE_CHILD_STACK_KB,
  });
  return shared;
}

async function runParseJob<K extends keyof ParseJobs>(
  child: IsolatedChild,
  job: K,
  input: Parameters<ParseJobs[K]>[0],
): Promise<ReturnType<ParseJobs[K]>> {
  return (await child.run(job, input)) as ReturnType<ParseJobs[K]>;
}

/** Why a parse got no answer, in words for whoever sent the file. */
function limitReason({ reason, limits }: IsolatedChildError): string {
  return reason === 'timeout'
    ? `parsing took longer than ${limits.deadlineMs / 1000} s`
    : `its parser stopped (it may have run out of its ${limits.maxOldSpaceMb} MB of memory or its stack)`;
}

/** validateFactoryTree in the parse child; a parse that did not finish is an FF_PARSE_LIMIT diagnostic. */
export async function validateUntrustedTree(
  files: TreeFile[],
  gitAllowedOwners: readonly string[] | undefined,
  child = parseChild(),
): Promise<TreeValidationResult> {
  try {
    return await runParseJob(child, 'validateFactoryTree', { files, gitAllowedOwners });
  } catch (err) {
    if (!(err instanceof IsolatedChildError)) throw err;
    return { validation: unparsedTreeValidation(files, limitReason(err)) };
  }
}

/** What a FACTORY.md is held to: whose skills it may name (GIT_ALLOWED_OWNERS) and the models this deployment serves (servedModelIds). */
export interface FactoryFileChecks {
  gitAllowedOwners: readonly string[] | undefined;
  servedModels: readonly string[];
}

/** checkFactoryFile in the parse child; a parse that did not finish is an error of the `file`. */
export async function checkUntrustedFactoryFile(
  content: string,
  filePath: string | undefined,
  checks: FactoryFileChecks,
  child = parseChild(),
): Promise<FactoryFileCheck> {
  try {
    return await runParseJob(child, 'checkFactoryFile', { content, path: filePath, ...checks });
  } catch (err) {
    if (!(err instanceof IsolatedChildError)) throw err;
    const message = `could not be parsed within this service's limits: ${limitReason(err)}; make it smaller and simpler`;
    return { valid: false, errors: [{ path: 'file', message }] };
  }
}

/** parseSkillFile in the parse child: a SkillFormatError for a file it refuses or could not parse. */
export async function parseUntrustedSkillFile(
  content: string,
  where: string,
  child = parseChild(),
): Promise<SkillFile> {
  let parsed: Awaited<ReturnType<ParseJobs['parseSkillFile']>>;
  try {
    parsed = await runParseJob(child, 'parseSkillFile', { content, where });
  } catch (err) {
    if (!(err instanceof IsolatedChildError)) throw err;
    throw new SkillFormatError(`${where} could not be parsed within this service's limits: ${limitReason(err)}`);
  }
  if (!parsed.ok) throw new SkillFormatError(parsed.message);
  return parsed.skill;
}
