import { parseAgents } from './factory-file-agents';
import {
  FACTORIES_DIR,
  FACTORY_FILE_NAME,
  FACTORY_PATH_RE,
  MAX_FACTORY_DESCRIPTION_CHARS,
  MAX_FACTORY_FILE_BYTES,
  MAX_FACTORY_INSTRUCTIONS_CHARS,
  MAX_FACTORY_NAME_CHARS,
  SLUG_RE,
  SLUG_RULE,
  TOP_FIELDS,
  type FactoryFile,
  type FactoryFileProblem,
  type FactoryFileResult,
} from './factory-file-format';
import { maxChars, requiredString, type Add } from './factory-file-values';
import { parseYamlSource } from './factory-tree/yaml-source';

/**
 * The FACTORY.md format: a factory defined in a repository, at
 * `.agents/factories/<name>/FACTORY.md`. YAML front matter names the factory and lists its agents
 * (exactly one FOREMAN); the markdown body is the factory's instructions, which every agent of the
 * factory is told besides its own prompt. Repository bytes are untrusted: sizes are capped and
 * every problem is reported at once, each with where it is and what to do about it.
 */

export {
  FACTORIES_DIR,
  FACTORY_FILE_NAME,
  MAX_FACTORY_AGENTS,
  MAX_FACTORY_DESCRIPTION_CHARS,
  MAX_FACTORY_FILE_BYTES,
  MAX_FACTORY_INSTRUCTIONS_CHARS,
  MAX_FACTORY_NAME_CHARS,
  MAX_FACTORY_PROMPT_CHARS,
  type FactoryFile,
  type FactoryFileAgent,
  type FactoryFileProblem,
  type FactoryFileResult,
} from './factory-file-format';

/** The factory directory name of a `.agents/factories/<name>/FACTORY.md` path, if it is one. */
export function factoryDirName(filePath: string): string | undefined {
  return FACTORY_PATH_RE.exec(filePath)?.[1];
}

/**
 * Parses and validates a FACTORY.md. With `filePath` (relative to its repository), the factory's
 * `name` must equal its directory's name.
 */
export function parseFactoryFile(content: string, filePath?: string): FactoryFileResult {
  const problems: FactoryFileProblem[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const fail = (): FactoryFileResult => ({ ok: false, errors: problems });

  let dirName: string | undefined;
  if (filePath !== undefined) {
    dirName = factoryDirName(filePath);
    if (dirName === undefined) {
      add('path', `must be \`${FACTORIES_DIR}/<name>/${FACTORY_FILE_NAME}\` (got \`${filePath}\`)`);
    }
  }

  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > MAX_FACTORY_FILE_BYTES) {
    add('file', `is ${bytes} bytes; a ${FACTORY_FILE_NAME} may be at most ${MAX_FACTORY_FILE_BYTES} bytes (256 KiB)`);
    return fail();
  }
  if (content.includes('\u0000')) {
    add('file', 'contains NUL characters; a FACTORY.md is UTF-8 text');
    return fail();
  }

  const match = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n([\s\S]*))?$/.exec(content);
  if (!match) {
    add(
      'front_matter',
      'the file must start with YAML front matter between two `---` lines (name, description, agents), followed by the markdown instructions',
    );
    return fail();
  }
  const meta = parseFrontMatter(match[1]!, add);
  if (meta === undefined) return fail();

  for (const key of Object.keys(meta)) {
    if (!(TOP_FIELDS as readonly string[]).includes(key)) {
      add(key, `unknown field; the front matter takes only ${TOP_FIELDS.join(', ')} (remove it)`);
    }
  }

  const name = requiredString(meta.name, 'name', add);
  if (name !== undefined) {
    if (!SLUG_RE.test(name) || name.length > MAX_FACTORY_NAME_CHARS) add('name', `${SLUG_RULE}; got "${name}"`);
    else if (dirName !== undefined && name !== dirName) {
      add(
        'name',
        `is "${name}" but the file is in ${FACTORIES_DIR}/${dirName}/; the name must equal the directory's name, so rename one of them`,
      );
    }
  }
  const description = requiredString(meta.description, 'description', add);
  if (description !== undefined) maxChars(description, MAX_FACTORY_DESCRIPTION_CHARS, 'description', add);

  const agents = parseAgents(meta.agents, add);

  const instructions = (match[2] ?? '').trim();
  if (instructions.length > MAX_FACTORY_INSTRUCTIONS_CHARS) {
    add(
      'instructions',
      `the markdown body is ${instructions.length} characters; at most ${MAX_FACTORY_INSTRUCTIONS_CHARS} (move details into the agents' skills)`,
    );
  }

  if (problems.length || name === undefined || description === undefined || agents === undefined) return fail();
  return { ok: true, factory: { name, description, agents, instructions } };
}

function parseFrontMatter(source: string, add: Add): Record<string, unknown> | undefined {
  // The front matter starts on the file's second line, after `---`.
  const parsed = parseYamlSource(source, 2);
  if (!parsed.ok) {
    for (const { position, message } of parsed.errors) {
      add('front_matter', `YAML error at line ${position.line}, column ${position.column}: ${message}`);
    }
    return undefined;
  }
  const { value } = parsed;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    add('front_matter', 'must be a YAML mapping with name, description and agents');
    return undefined;
  }
  return value as Record<string, unknown>;
}

/** Agents' `base_model`s this service does not serve, each with why. */
function unservedModels(factory: FactoryFile, modelProblem: (modelId: string) => string | undefined) {
  return factory.agents.flatMap((agent, index) => {
    const problem = agent.base_model ? modelProblem(agent.base_model) : undefined;
    return problem ? [{ path: `agents[${index}].base_model`, message: problem }] : [];
  });
}

/**
 * Skills of a factory's agents that this service may not load: `allowed` says whether
 * GIT_ALLOWED_OWNERS lets a run load a skill spec (the file format itself does not depend on it).
 */
export function disallowedSkills(factory: FactoryFile, allowed: (spec: string) => boolean): FactoryFileProblem[] {
  const problems: FactoryFileProblem[] = [];
  for (const [index, agent] of factory.agents.entries()) {
    for (const [at, spec] of agent.skills.entries()) {
      if (allowed(spec)) continue;
      problems.push({
        path: `agents[${index}].skills[${at}]`,
        message: `this service's GIT_ALLOWED_OWNERS does not include ${spec.slice(0, spec.indexOf('/'))}; use a skill of an allowed owner or a bundled one (\`agent-runs/bundled:<id>\`)`,
      });
    }
  }
  return problems;
}

export type FactoryFileCheck = { valid: true; factory: FactoryFile } | { valid: false; errors: FactoryFileProblem[] };

/**
 * The whole check a FACTORY.md gets, the same wherever it is made (discovery, the validation
 * endpoint, the agent's `validate_factory_file` tool): the format, then the agents' skills
 * against what this service may load and their models against what it serves (`modelProblem`
 * says why a model id cannot be served, services/platform/model-list.ts).
 */
export function checkFactoryFile(
  content: string,
  filePath: string | undefined,
  allowedSkill: (spec: string) => boolean,
  modelProblem: (modelId: string) => string | undefined = () => undefined,
): FactoryFileCheck {
  const parsed = parseFactoryFile(content, filePath);
  if (!parsed.ok) return { valid: false, errors: parsed.errors };
  const errors = [...disallowedSkills(parsed.factory, allowedSkill), ...unservedModels(parsed.factory, modelProblem)];
  return errors.length ? { valid: false, errors } : { valid: true, factory: parsed.factory };
}
