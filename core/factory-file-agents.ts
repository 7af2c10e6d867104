import { AGENT_TYPES, type AgentType } from './agent-types';
import {
  AGENT_FIELDS,
  MAX_AGENT_SKILLS,
  MAX_BASE_MODEL_CHARS,
  MAX_FACTORY_AGENTS,
  MAX_FACTORY_DESCRIPTION_CHARS,
  MAX_FACTORY_NAME_CHARS,
  MAX_FACTORY_PROMPT_CHARS,
  SLUG_RE,
  SLUG_RULE,
  type FactoryFileAgent,
} from './factory-file-format';
import { maxChars, optionalString, requiredString, type Add } from './factory-file-values';
import { isKnownModelProvider, modelProviderOf, MODEL_PROVIDERS } from './model-providers';
import { SKILL_SPEC_RE, SKILL_SPEC_RULE } from './skill-spec';

/** The `agents` of a FACTORY.md's front matter: each agent checked, every problem reported. */
export function parseAgents(value: unknown, add: Add): FactoryFileAgent[] | undefined {
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
