import { AGENT_TYPES } from '../agent-types';
import {
  MAX_AGENT_SKILLS,
  MAX_BASE_MODEL_CHARS,
  MAX_FACTORY_DESCRIPTION_CHARS,
  MAX_FACTORY_INSTRUCTIONS_CHARS,
  MAX_FACTORY_NAME_CHARS,
  SLUG_RE,
} from '../factory-file-format';
import { MODEL_PROVIDERS } from '../model-providers';
import { SKILL_SPEC_RE } from '../skill-spec';

/**
 * The JSON Schema 2020-12 documents of the factory tree format (`factory.yaml` plus
 * `agents/<name>/agent.md`), by schema version. They are what `GET /factory-files/schemas…`
 * serves and what the validator (validate-tree.ts) compiles: one definition of the format.
 * Each document's `$id` is its file name, so relative `$ref`s resolve between siblings, whether
 * read from the bundle or from `/factory-files/schemas/<version>/<document>`.
 */

export const FACTORY_SCHEMA_VERSIONS = ['v1alpha1'] as const;
export type FactorySchemaVersion = (typeof FACTORY_SCHEMA_VERSIONS)[number];
export const CURRENT_FACTORY_SCHEMA_VERSION: FactorySchemaVersion = 'v1alpha1';

export const FACTORY_DOCUMENT = 'factory.schema.json';
export const AGENT_DOCUMENT = 'agent.schema.json';
export const COMMON_DOCUMENT = 'common.schema.json';

const DIALECT = 'https://json-schema.org/draft/2020-12/schema';

const common = {
  $schema: DIALECT,
  $id: COMMON_DOCUMENT,
  title: 'Definitions shared by the factory files',
  $defs: {
    name: {
      type: 'string',
      pattern: SLUG_RE.source,
      maxLength: MAX_FACTORY_NAME_CHARS,
      description: `lowercase letters, digits and single hyphens (e.g. \`review-team\`), at most ${MAX_FACTORY_NAME_CHARS} characters`,
    },
    agent_type: {
      enum: [...AGENT_TYPES],
      description: `one of ${AGENT_TYPES.join(', ')}, in capitals`,
    },
    base_model: {
      type: 'string',
      pattern: `^(${MODEL_PROVIDERS.join('|')})/\\S+$`,
      maxLength: MAX_BASE_MODEL_CHARS,
      description: `\`<provider>/<model>\` with provider ${MODEL_PROVIDERS.join(' or ')}, e.g. \`openai/gpt-4o\``,
    },
    skill: {
      type: 'string',
      pattern: SKILL_SPEC_RE.source,
      description:
        '`owner/repo:skill-name` or `owner/repo:path/to/SKILL.md` (bundled skills: `agent-runs/bundled:<id>`)',
    },
  },
} as const;

const factory = {
  $schema: DIALECT,
  $id: FACTORY_DOCUMENT,
  title: 'factory.yaml',
  description:
    "A factory: a team of agents led by one FOREMAN. Its agents are the files `agents/<name>/agent.md` beside this file; the agent's name is its directory's.",
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description'],
  properties: {
    schema_version: {
      enum: [...FACTORY_SCHEMA_VERSIONS],
      description: `the format's version; default ${CURRENT_FACTORY_SCHEMA_VERSION}`,
    },
    name: { $ref: `${COMMON_DOCUMENT}#/$defs/name` },
    description: {
      type: 'string',
      minLength: 1,
      pattern: '\\S',
      maxLength: MAX_FACTORY_DESCRIPTION_CHARS,
      description: `what the factory does (not blank), 1 to ${MAX_FACTORY_DESCRIPTION_CHARS} characters`,
    },
    instructions: {
      type: 'string',
      maxLength: MAX_FACTORY_INSTRUCTIONS_CHARS,
      description: `what every agent of the factory is told besides its own prompt, at most ${MAX_FACTORY_INSTRUCTIONS_CHARS} characters`,
    },
  },
} as const;

const agent = {
  $schema: DIALECT,
  $id: AGENT_DOCUMENT,
  title: 'agents/<name>/agent.md front matter',
  description:
    "The YAML front matter of an agent's file, between two `---` lines; the markdown after it is the agent's prompt.",
  type: 'object',
  additionalProperties: false,
  required: ['agent_type'],
  properties: {
    agent_type: { $ref: `${COMMON_DOCUMENT}#/$defs/agent_type` },
    description: {
      type: 'string',
      maxLength: MAX_FACTORY_DESCRIPTION_CHARS,
      description: `what the agent is for (the foreman reads it to choose), at most ${MAX_FACTORY_DESCRIPTION_CHARS} characters`,
    },
    base_model: { $ref: `${COMMON_DOCUMENT}#/$defs/base_model` },
    skills: {
      type: 'array',
      maxItems: MAX_AGENT_SKILLS,
      items: { $ref: `${COMMON_DOCUMENT}#/$defs/skill` },
      description: `a list of at most ${MAX_AGENT_SKILLS} skill specs`,
    },
  },
} as const;

const DOCUMENTS: Record<FactorySchemaVersion, Record<string, object>> = {
  v1alpha1: { [FACTORY_DOCUMENT]: factory, [AGENT_DOCUMENT]: agent, [COMMON_DOCUMENT]: common },
};

export function isFactorySchemaVersion(value: unknown): value is FactorySchemaVersion {
  return typeof value === 'string' && (FACTORY_SCHEMA_VERSIONS as readonly string[]).includes(value);
}

/** Every document of a version, keyed by file name (each document's `$id`). */
export function factorySchemaDocuments(version: FactorySchemaVersion): Record<string, object> {
  return DOCUMENTS[version];
}
