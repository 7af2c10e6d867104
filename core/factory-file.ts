import { LineCounter, parseDocument } from 'yaml';
import { AGENT_TYPES, type AgentType } from './agent-types';
import { isKnownModelProvider, modelProviderOf, MODEL_PROVIDERS } from './model-providers';
import { SKILL_SPEC_RE, SKILL_SPEC_RULE } from './skill-spec';

/**
 * The FACTORY.md format: a factory defined in a repository, at
 * `.agents/factories/<name>/FACTORY.md`. YAML front matter names the factory and lists its agents
 * (exactly one FOREMAN); the markdown body is the factory's instructions, which every agent of the
 * factory is told besides its own prompt. Repository bytes are untrusted: sizes are capped and
 * every problem is reported at once, each with where it is and what to do about it.
 */

export const FACTORIES_DIR = '.agents/factories';
export const FACTORY_FILE_NAME = 'FACTORY.md';
export const MAX_FACTORY_FILE_BYTES = 256 * 1024;
export const MAX_FACTORY_AGENTS = 20;
export const MAX_FACTORY_PROMPT_CHARS = 100_000;
export const MAX_FACTORY_INSTRUCTIONS_CHARS = 100_000;
export const MAX_FACTORY_NAME_CHARS = 64;
export const MAX_FACTORY_DESCRIPTION_CHARS = 2000;
const MAX_AGENT_SKILLS = 50;
const MAX_BASE_MODEL_CHARS = 200;

const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SLUG_RULE = `must be lowercase letters, digits and single hyphens (e.g. \`review-team\`), at most ${MAX_FACTORY_NAME_CHARS} characters`;
const FACTORY_PATH_RE = /^\.agents\/factories\/([^/]+)\/FACTORY\.md$/;
const TOP_FIELDS = ['name', 'description', 'agents'] as const;
const AGENT_FIELDS = ['name', 'agent_type', 'description', 'prompt', 'base_model', 'skills'] as const;

export interface FactoryFileAgent {
  name: string;
  agent_type: AgentType;
  description: string | null;
  prompt: string | null;
  base_model: string | null;
  skills: string[];
}

export interface FactoryFile {
  name: string;
  description: string;
  agents: FactoryFileAgent[];
  /** The markdown body, trimmed; empty when the file has none. */
  instructions: string;
}

/** One thing wrong with a FACTORY.md: where (`agents[1].agent_type`, `front_matter`, `file`) and what to fix. */
export interface FactoryFileProblem {
  path: string;
  message: string;
}

export type FactoryFileResult = { ok: true; factory: FactoryFile } | { ok: false; errors: FactoryFileProblem[] };

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

type Add = (path: string, message: string) => void;

function parseFrontMatter(source: string, add: Add): Record<string, unknown> | undefined {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length) {
    for (const error of doc.errors.slice(0, 10)) {
      // +1: the front matter starts on the file's second line, after `---`.
      const { line, col } = lineCounter.linePos(error.pos[0]);
      add('front_matter', `YAML error at line ${line + 1}, column ${col}: ${error.message}`);
    }
    return undefined;
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    add('front_matter', `YAML error: ${(err as Error).message}`);
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    add('front_matter', 'must be a YAML mapping with name, description and agents');
    return undefined;
  }
  return value as Record<string, unknown>;
}

function parseAgents(value: unknown, add: Add): FactoryFileAgent[] | undefined {
  if (value === undefined || value === null) {
    add('agents', "is required: a list of the factory's agents, one of them with `agent_type: FOREMAN`");
    return undefined;
  }
  if (!Array.isArray(value) || value.length === 0) {
    add('agents', 'must be a non-empty list of agents (`- name: ...`), one of them with `agent_type: FOREMAN`');
    return undefined;
  }
  if (value.length > MAX_FACTORY_AGENTS) {
    add('agents', `has ${value.length} agents; a factory has at most ${MAX_FACTORY_AGENTS}`);
    return undefined;
  }
  const agents: FactoryFileAgent[] = [];
  const names = new Map<string, number>();
  let foreman: { index: number; name: string } | undefined;
  // "No foreman" is said only when every agent's type could be read: a misspelt one may be it.
  let allTypesRead = true;
  for (const [index, raw] of value.entries()) {
    const at = `agents[${index}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      add(at, 'must be a mapping with at least `name` and `agent_type`');
      allTypesRead = false;
      continue;
    }
    const entry = raw as Record<string, unknown>;
    for (const key of Object.keys(entry)) {
      if (!(AGENT_FIELDS as readonly string[]).includes(key)) {
        add(`${at}.${key}`, `unknown field; an agent takes only ${AGENT_FIELDS.join(', ')} (remove it)`);
      }
    }

    const name = requiredString(entry.name, `${at}.name`, add);
    if (name !== undefined) {
      if (!SLUG_RE.test(name) || name.length > MAX_FACTORY_NAME_CHARS) {
        add(`${at}.name`, `${SLUG_RULE}; got "${name}"`);
      } else if (names.has(name)) {
        add(
          `${at}.name`,
          `"${name}" is already the name of agents[${names.get(name)}]; agent names are unique in a factory`,
        );
      } else {
        names.set(name, index);
      }
    }

    const agentType = parseAgentType(entry.agent_type, `${at}.agent_type`, add);
    if (agentType === undefined) allTypesRead = false;
    if (agentType === 'FOREMAN') {
      if (foreman) {
        add(
          `${at}.agent_type`,
          `a second FOREMAN: agents[${foreman.index}] ("${foreman.name}") is already the foreman; a factory has exactly one, so give this agent another type`,
        );
      } else {
        foreman = { index, name: name ?? '?' };
      }
    }

    const description = optionalString(entry.description, `${at}.description`, add);
    if (description) maxChars(description, MAX_FACTORY_DESCRIPTION_CHARS, `${at}.description`, add);
    const prompt = optionalString(entry.prompt, `${at}.prompt`, add);
    if (prompt) maxChars(prompt, MAX_FACTORY_PROMPT_CHARS, `${at}.prompt`, add);
    const baseModel = parseBaseModel(entry.base_model, `${at}.base_model`, add);
    const skills = parseSkills(entry.skills, `${at}.skills`, add);

    if (
      name === undefined ||
      agentType === undefined ||
      description === undefined ||
      prompt === undefined ||
      baseModel === false ||
      skills === undefined
    ) {
      continue;
    }
    agents.push({
      name,
      agent_type: agentType,
      description: description || null,
      prompt: prompt || null,
      base_model: baseModel,
      skills,
    });
  }
  if (!foreman && allTypesRead) {
    add(
      'agents',
      'no agent has `agent_type: FOREMAN`; exactly one agent must be the foreman, which takes the work and dispatches parts of it',
    );
  }
  return agents;
}

function parseAgentType(value: unknown, path: string, add: Add): AgentType | undefined {
  const allowed = AGENT_TYPES.join(', ');
  if (value === undefined || value === null) {
    add(path, `is required: one of ${allowed}`);
    return undefined;
  }
  if (typeof value === 'string' && (AGENT_TYPES as readonly string[]).includes(value)) return value as AgentType;
  const hint =
    typeof value === 'string' && (AGENT_TYPES as readonly string[]).includes(value.trim().toUpperCase())
      ? ` (write it as ${value.trim().toUpperCase()})`
      : '';
  add(path, `must be one of ${allowed}; got ${JSON.stringify(value)}${hint}`);
  return undefined;
}

/** The model, null when absent, false when wrong (reported). */
function parseBaseModel(value: unknown, path: string, add: Add): string | null | false {
  if (value === undefined || value === null) return null;
  const providers = MODEL_PROVIDERS.map((p) => `\`${p}/<model>\``).join(' or ');
  if (typeof value !== 'string' || !/^[a-z0-9-]+\/\S+$/.test(value) || value.length > MAX_BASE_MODEL_CHARS) {
    add(path, `must be \`<provider>/<model>\`, e.g. \`openai/gpt-4o\`; got ${JSON.stringify(value)}`);
    return false;
  }
  if (!isKnownModelProvider(value)) {
    add(path, `this service has no provider "${modelProviderOf(value)}"; use ${providers}`);
    return false;
  }
  return value;
}

function parseSkills(value: unknown, path: string, add: Add): string[] | undefined {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    add(path, 'must be a list of skill specs (`owner/repo:skill-name` or `owner/repo:path/to/SKILL.md`)');
    return undefined;
  }
  if (value.length > MAX_AGENT_SKILLS) {
    add(path, `has ${value.length} skills; at most ${MAX_AGENT_SKILLS}`);
    return undefined;
  }
  let ok = true;
  for (const [index, spec] of value.entries()) {
    if (typeof spec !== 'string' || !SKILL_SPEC_RE.test(spec)) {
      add(`${path}[${index}]`, `${SKILL_SPEC_RULE}; got ${JSON.stringify(spec)}`);
      ok = false;
    }
  }
  return ok ? (value as string[]) : undefined;
}

function requiredString(value: unknown, path: string, add: Add): string | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && !value.trim())) {
    add(path, 'is required (a non-empty string)');
    return undefined;
  }
  if (typeof value !== 'string') {
    add(path, `must be a string; got ${describe(value)} (quote it)`);
    return undefined;
  }
  return value.trim();
}

/** The string, '' when absent; undefined when it is not a string (reported). */
function optionalString(value: unknown, path: string, add: Add): string | undefined {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') {
    add(path, `must be a string; got ${describe(value)}`);
    return undefined;
  }
  return value.trim();
}

function maxChars(value: string, limit: number, path: string, add: Add): void {
  if (value.length > limit) add(path, `is ${value.length} characters; at most ${limit}`);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
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
 * against what this service may load.
 */
export function checkFactoryFile(
  content: string,
  filePath: string | undefined,
  allowedSkill: (spec: string) => boolean,
): FactoryFileCheck {
  const parsed = parseFactoryFile(content, filePath);
  if (!parsed.ok) return { valid: false, errors: parsed.errors };
  const errors = disallowedSkills(parsed.factory, allowedSkill);
  return errors.length ? { valid: false, errors } : { valid: true, factory: parsed.factory };
}
