import path from 'node:path';
import type { EntityManager } from 'typeorm';
import type { StepRun } from '../../db/run-step-reads';
import {
  FACTORIES_DIR,
  FACTORY_FILE_NAME,
  MAX_FACTORY_AGENTS,
  MAX_FACTORY_FILE_BYTES,
  type FactoryFile,
  type FactoryFileProblem,
} from '../../core/factory-file';
import { diagnosticPlace } from '../../core/factory-tree/diagnostics';
import { AGENT_FILE, FACTORY_YAML } from '../../core/factory-tree/tree-files';
import { hasLoadedBundledSkill } from '../../db/run-event-reads';
import type { ToolSpec } from '../model/types';
import type { WorkspaceFiles } from '../sandbox/workspace-files';
import { FACTORY_FILES_SKILL } from '../../services/skills/bundled-skills';
import {
  checkUntrustedFactoryFile,
  validateUntrustedTree,
  type FactoryFileChecks,
} from '../../services/untrusted-parse/untrusted-parser';
import type { ToolOutcome } from './builtin-tools';
import { capText } from './output-capture';
import { traceToolCall } from './traced-tool-call';

/**
 * `validate_factory_file`: the check the validation endpoint and factory discovery make, for an
 * agent inside a run, which has no way to the service's API. The worker runs it; the file is read
 * through the run's sandbox with the file tools' rules, and its bytes are the repository's
 * (untrusted, capped at the format's limit).
 */
export const VALIDATE_FACTORY_FILE_TOOL = 'validate_factory_file';

export const VALIDATE_FACTORY_FILE_SPEC: ToolSpec = {
  name: VALIDATE_FACTORY_FILE_TOOL,
  description: `Validate a factory definition in the workspace (\`<repository>/${FACTORIES_DIR}/<name>/${FACTORY_FILE_NAME}\`, or a factory tree's \`<repository>/${FACTORIES_DIR}/<name>/${FACTORY_YAML}\` with its \`agents/<agent>/${AGENT_FILE}\`) with the check the service's factory discovery makes. Returns every problem with where it is, or a summary of the factory when it is valid.`,
  parameters: {
    type: 'object',
    properties: {
      path: {
        type: 'string',
        description: `The ${FACTORY_FILE_NAME} or the tree's ${FACTORY_YAML}, relative to the workspace root.`,
      },
    },
    required: ['path'],
    additionalProperties: false,
  },
};

/**
 * Whether a run's agent is offered the tool: once the bundled `factory-files` skill, which
 * teaches it, is in play (the run's own skill, or loaded with read_skill). Every offered tool
 * costs tokens in every model request, and most runs never touch a factory.
 */
export async function offersFactoryFileTool(
  manager: EntityManager,
  runId: string,
  agentSkill: { bundled_skill_id?: unknown } | null,
): Promise<boolean> {
  return (
    agentSkill?.bundled_skill_id === FACTORY_FILES_SKILL ||
    (await hasLoadedBundledSkill(manager, runId, FACTORY_FILES_SKILL))
  );
}

/** `offersFactoryFileTool` as it stood when a step read its run (a skill loaded later in the step is not in it). */
export function offeredFactoryFileTool(run: Pick<StepRun, 'agent_skill' | 'loaded_bundled_skills'>): boolean {
  return (
    run.agent_skill?.bundled_skill_id === FACTORY_FILES_SKILL || run.loaded_bundled_skills.includes(FACTORY_FILES_SKILL)
  );
}

export interface FactoryFileToolContext {
  files: WorkspaceFiles;
  /** The workspace as the run's processes see it (what the model's paths are relative to). */
  workspacePath: string;
  /** The git repositories of the workspace, relative to it ('' for the workspace itself). */
  repositories: readonly string[];
  /** The skill owners this service may load (GIT_ALLOWED_OWNERS; undefined: every owner) and the models it serves. */
  checks: FactoryFileChecks;
  outputLimitBytes: number;
  signal: AbortSignal;
}

export function runValidateFactoryFile(
  args: Record<string, unknown>,
  ctx: FactoryFileToolContext,
): Promise<ToolOutcome> {
  return traceToolCall(VALIDATE_FACTORY_FILE_TOOL, 'builtin', async () => {
    const requested = args.path;
    if (typeof requested !== 'string' || !requested) {
      return { output: `${VALIDATE_FACTORY_FILE_TOOL} failed: \`path\` must be a string`, isError: true };
    }
    if (path.posix.basename(requested) === FACTORY_YAML) return validateTree(requested, ctx);
    let bytes: Buffer;
    try {
      // In the sandbox, like read_file: a path or symlink leading out of the workspace is refused,
      // and so is a symlink as the file itself (discovery never follows one either).
      bytes = await ctx.files.readBytes(requested, MAX_FACTORY_FILE_BYTES);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      const message = err instanceof Error ? err.message : String(err);
      const hint = /above the limit/.test(message)
        ? ` (a ${FACTORY_FILE_NAME} is at most 256 KiB; discovery skips a larger one)`
        : '';
      return { output: `${VALIDATE_FACTORY_FILE_TOOL} failed: ${message}${hint}`, isError: true };
    }
    const where = locate(ctx, requested);
    // Decoded as discovery decodes it: a stray byte becomes U+FFFD, a NUL is reported.
    const checked = await checkUntrustedFactoryFile(bytes.toString('utf8'), where.repoPath, ctx.checks);
    const text = checked.valid ? describeValid(checked.factory, where) : describeInvalid(checked.errors, where);
    return { output: capText(text, ctx.outputLimitBytes), isError: false };
  });
}

/**
 * A factory tree: its factory.yaml and the `agents/<agent>/agent.md` beside it, read through the
 * sandbox as discovery reads them, checked as `POST /factory-files/validate` checks them.
 */
async function validateTree(requested: string, ctx: FactoryFileToolContext): Promise<ToolOutcome> {
  const fail = (message: string): ToolOutcome => ({
    output: `${VALIDATE_FACTORY_FILE_TOOL} failed: ${message}`,
    isError: true,
  });
  const dir = path.posix.dirname(requested);
  let root: Buffer;
  let agents: { path: string; content?: string; error?: string }[];
  try {
    root = await ctx.files.readBytes(requested, MAX_FACTORY_FILE_BYTES);
    agents = await ctx.files.filesInSubdirectories('', `${dir}/agents`, AGENT_FILE, {
      maxBytes: MAX_FACTORY_FILE_BYTES,
      maxEntries: MAX_FACTORY_AGENTS + 1,
    });
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return fail(err instanceof Error ? err.message : String(err));
  }
  const unreadable = agents.find((entry) => entry.content === undefined);
  if (unreadable)
    return fail(`${unreadable.path} ${unreadable.error ?? 'is unreadable'}; discovery would skip this tree`);
  const where = locate(ctx, requested);
  // The tree's files as discovery names them: inside the repository that holds them.
  const inRepo = (file: string) => where.repoPath.slice(0, -FACTORY_YAML.length) + file.slice(dir.length + 1);
  const { validation, factory } = await validateUntrustedTree(
    [
      { path: where.repoPath, content: root.toString('utf8') },
      ...agents.map((entry) => ({ path: inRepo(entry.path), content: entry.content! })),
    ],
    ctx.checks.gitAllowedOwners,
  );
  const text = factory
    ? describeValid(factory, where)
    : [
        `Invalid: ${validation.diagnostics.length} problem${validation.diagnostics.length === 1 ? '' : 's'} in the tree of ${where.label}; discovery would skip it. Fix each, then validate again:`,
        ...validation.diagnostics.map((d) => `- ${diagnosticPlace(d)}: ${d.message} (${d.code})`),
        ...(where.note ? [where.note] : []),
      ].join('\n');
  return { output: capText(text, ctx.outputLimitBytes), isError: false };
}

interface Location {
  /** The path inside its repository, which the name is checked against. */
  repoPath: string;
  /** How the answer names the file. */
  label: string;
  note?: string;
}

/** Where the file stands for discovery: its path inside the workspace repository that holds it. */
function locate(ctx: FactoryFileToolContext, requested: string): Location {
  const relative = path.posix.relative(ctx.workspacePath, path.posix.resolve(ctx.workspacePath, requested));
  const rel = relative === '..' || relative.startsWith('../') ? requested : relative;
  const repo = ctx.repositories.find((r) => r !== '' && rel.startsWith(`${r}/`));
  if (repo !== undefined) {
    const repoPath = rel.slice(repo.length + 1);
    return { repoPath, label: `\`${repoPath}\` of repository \`${repo}\`` };
  }
  if (ctx.repositories.includes('')) return { repoPath: rel, label: `\`${rel}\`` };
  const suffix = /(?:^|\/)(\.agents\/factories\/[^/]+\/(?:FACTORY\.md|factory\.yaml))$/.exec(rel)?.[1];
  return {
    repoPath: suffix ?? rel,
    label: `\`${rel}\``,
    note: `Note: ${rel} is in no git repository of the workspace; discovery reads ${FACTORIES_DIR}/ only in the repositories an environment clones.`,
  };
}

function describeValid(factory: FactoryFile, where: Location): string {
  const agents = factory.agents.map((a) => {
    const parts = [
      `model: ${a.base_model ?? 'the service default'}`,
      `skills: ${a.skills.length ? a.skills.join(', ') : 'none'}`,
      `prompt: ${a.prompt ? `${a.prompt.length} characters` : 'none'}`,
    ];
    return `- ${a.name} (${a.agent_type}): ${parts.join('; ')}`;
  });
  return [
    `Valid: factory "${factory.name}" in ${where.label}.`,
    `Description: ${factory.description}`,
    `Agents (${factory.agents.length}):`,
    ...agents,
    `Instructions (the markdown body, told to every agent): ${factory.instructions ? `${factory.instructions.length} characters` : 'none'}.`,
    `Once committed on the branch an environment clones, discovery records it with the agent identities ${factory.agents.map((a) => `${factory.name}/${a.name}`).join(', ')}.`,
    ...(where.note ? [where.note] : []),
  ].join('\n');
}

function describeInvalid(errors: FactoryFileProblem[], where: Location): string {
  return [
    `Invalid: ${errors.length} problem${errors.length === 1 ? '' : 's'} in ${where.label}; discovery would skip this file. Fix each, then validate again:`,
    ...errors.map((e) => `- ${e.path}: ${e.message}`),
    ...(where.note ? [where.note] : []),
  ].join('\n');
}
