import type { AgentType } from '../agent-types';
import {
  FACTORIES_DIR,
  MAX_FACTORY_AGENTS,
  MAX_FACTORY_PROMPT_CHARS,
  type FactoryFile,
  type FactoryFileAgent,
} from '../factory-file-format';
import { DIAGNOSTIC_CODES, diagnosticsOf, leftOutDiagnostics, type Diagnostic } from './diagnostics';
import { readAgentFile, readFactoryYaml, type ParsedAgentFile, type ParsedYaml } from './read-tree-file';
import { checkAgainstSchema } from './schema-check';
import {
  AGENT_DOCUMENT,
  CURRENT_FACTORY_SCHEMA_VERSION,
  FACTORY_DOCUMENT,
  FACTORY_SCHEMA_VERSIONS,
  isFactorySchemaVersion,
} from './schema-documents';
import { AGENT_FILE, FACTORY_TREE_PATH_RE, FACTORY_YAML, sortTreeFiles, type TreeFile } from './tree-files';

export type { Diagnostic } from './diagnostics';
export type { TreeFile } from './tree-files';

/** One authored value whose existence the validator deliberately did not prove. */
export interface DeferredResolution {
  path: string;
  field: string;
  kind: 'skill' | 'model';
}

/** What `POST /factory-files/validate` answers (the newest official client's FileValidateResponse). */
export interface TreeValidation {
  valid: boolean;
  schema_version: string;
  diagnostics: Diagnostic[];
  deferred_resolutions: DeferredResolution[];
  state_dependent_checks_not_run: string[];
  validation_scope: {
    parser: 'checked' | 'not_run';
    state_independent: 'checked' | 'not_run';
    state_dependent: 'not_checked';
  };
}

/** The answer, and the factory the tree defines when it is valid. */
export interface TreeValidationResult {
  validation: TreeValidation;
  factory?: FactoryFile;
}

/**
 * What applying a tree to a team would check and this validator cannot: it reads no team's
 * state. Listed on every answer, so that a pass is not read as a promise.
 */
export const STATE_DEPENDENT_CHECKS = [
  'factory_name_unique_in_team',
  'agent_identity_names_unique_in_team',
  'skills_resolve',
  'base_models_available',
] as const;

interface Agent {
  name: string;
  file: TreeFile;
  parsed: ParsedAgentFile;
}

/**
 * Validates a factory tree in two tiers: the parser (paths, sizes, YAML, and each file against
 * the JSON Schema documents of its version), then, when that found nothing, the rules across
 * files that need no team's state (one foreman, how many agents, prompt sizes, the skill owners
 * this deployment allows). Every problem is reported at once, at its line and column.
 */
export function validateFactoryTree(
  files: readonly TreeFile[],
  allowedSkill: (spec: string) => boolean,
): TreeValidationResult {
  const diagnostics: Diagnostic[] = [];
  const tree = sortTreeFiles(files, diagnostics);
  let version: string = CURRENT_FACTORY_SCHEMA_VERSION;

  let factoryYaml: ParsedYaml | undefined;
  if (tree.factoryFile) {
    const report = diagnosticsOf(tree.factoryFile.path, diagnostics);
    factoryYaml = readFactoryYaml(tree.factoryFile.content, report);
    const declared = (factoryYaml?.value as { schema_version?: unknown } | null)?.schema_version;
    if (declared !== undefined) version = String(declared);
    if (factoryYaml && !isFactorySchemaVersion(version)) {
      report(
        DIAGNOSTIC_CODES.unsupportedSchemaVersion,
        `\`schema_version\` ${JSON.stringify(declared)} is not one this server describes; use ${FACTORY_SCHEMA_VERSIONS.join(', ')} (GET /api/v1/factory-files/schemas)`,
        factoryYaml.positionOf('/schema_version'),
      );
      factoryYaml = undefined;
    }
  }
  const schemaVersion = isFactorySchemaVersion(version) ? version : undefined;
  if (factoryYaml && schemaVersion) {
    const report = diagnosticsOf(tree.factoryFile!.path, diagnostics);
    checkAgainstSchema(
      schemaVersion,
      FACTORY_DOCUMENT,
      factoryYaml.value,
      factoryYaml.positionOf,
      FACTORY_YAML,
      report,
    );
  }

  const agents: Agent[] = [];
  for (const [name, file] of tree.agentFiles) {
    const report = diagnosticsOf(file.path, diagnostics);
    const parsed = readAgentFile(file.content, report);
    if (!parsed) continue;
    if (schemaVersion) {
      const { value, positionOf } = parsed.frontMatter;
      checkAgainstSchema(schemaVersion, AGENT_DOCUMENT, value, positionOf, `${AGENT_FILE}'s front matter`, report);
    }
    agents.push({ name, file, parsed });
  }

  const parserClean = diagnostics.length === 0;
  const deferred: DeferredResolution[] = [];
  if (parserClean) {
    checkName(tree.factoryFile!, factoryYaml!, diagnostics);
    checkAcrossFiles(tree.factoryFile!, agents, allowedSkill, diagnostics, deferred);
  }
  const valid = diagnostics.length === 0;
  const validation: TreeValidation = {
    valid,
    schema_version: version,
    diagnostics: [...diagnostics.sort(byPlace), ...leftOutDiagnostics(diagnostics)],
    deferred_resolutions: deferred,
    state_dependent_checks_not_run: [...STATE_DEPENDENT_CHECKS],
    validation_scope: {
      parser: 'checked',
      state_independent: parserClean ? 'checked' : 'not_run',
      state_dependent: 'not_checked',
    },
  };
  return valid ? { validation, factory: factoryOf(factoryYaml!.value, agents) } : { validation };
}

/** In a repository's `.agents/factories/<dir>/`, as discovery reads it, the factory's name is its directory's. */
function checkName(factoryFile: TreeFile, factoryYaml: ParsedYaml, diagnostics: Diagnostic[]): void {
  const dir = FACTORY_TREE_PATH_RE.exec(factoryFile.path)?.[1];
  const { name } = factoryYaml.value as { name: string };
  if (dir === undefined || name === dir) return;
  diagnosticsOf(factoryFile.path, diagnostics)(
    DIAGNOSTIC_CODES.nameMismatch,
    `\`name\` is "${name}" but the file is in ${FACTORIES_DIR}/${dir}/; the name must equal the directory's name, so rename one of them`,
    factoryYaml.positionOf('/name'),
  );
}

function checkAcrossFiles(
  factoryFile: TreeFile,
  agents: Agent[],
  allowedSkill: (spec: string) => boolean,
  diagnostics: Diagnostic[],
  deferred: DeferredResolution[],
): void {
  const atFactory = diagnosticsOf(factoryFile.path, diagnostics);
  const root = factoryFile.path.slice(0, -FACTORY_YAML.length);
  if (agents.length === 0) {
    atFactory(
      DIAGNOSTIC_CODES.noAgents,
      `the factory has no agents; add ${root}agents/<name>/${AGENT_FILE}, one of them with \`agent_type: FOREMAN\``,
    );
  }
  if (agents.length > MAX_FACTORY_AGENTS) {
    atFactory(DIAGNOSTIC_CODES.tooManyAgents, `the factory has ${agents.length} agents; at most ${MAX_FACTORY_AGENTS}`);
  }
  const foremen = agents.filter((agent) => frontMatterOf(agent).agent_type === 'FOREMAN');
  if (agents.length > 0 && foremen.length === 0) {
    atFactory(
      DIAGNOSTIC_CODES.noForeman,
      'no agent has `agent_type: FOREMAN`; exactly one agent must be the foreman, which takes the work and dispatches parts of it',
    );
  }
  for (const extra of foremen.length > 1 ? foremen : []) {
    diagnosticsOf(extra.file.path, diagnostics)(
      DIAGNOSTIC_CODES.multipleForemen,
      `${foremen.map((agent) => agent.name).join(', ')} are all FOREMAN; a factory has exactly one foreman (give the others another agent_type)`,
      extra.parsed.frontMatter.positionOf('/agent_type'),
    );
  }
  for (const agent of agents) {
    const report = diagnosticsOf(agent.file.path, diagnostics);
    if (agent.parsed.prompt.length > MAX_FACTORY_PROMPT_CHARS) {
      report(
        DIAGNOSTIC_CODES.promptTooLong,
        `the prompt (the markdown after the front matter) is ${agent.parsed.prompt.length} characters; at most ${MAX_FACTORY_PROMPT_CHARS} (move details into skills)`,
        agent.parsed.promptAt,
      );
    }
    const { skills = [], base_model } = frontMatterOf(agent);
    for (const [index, spec] of skills.entries()) {
      if (allowedSkill(spec)) {
        deferred.push({ path: agent.file.path, field: `skills[${index}]`, kind: 'skill' });
        continue;
      }
      report(
        DIAGNOSTIC_CODES.skillNotAllowed,
        `\`skills[${index}]\`: this service's GIT_ALLOWED_OWNERS does not include ${spec.slice(0, spec.indexOf('/'))}; use a skill of an allowed owner or a bundled one (\`agent-runs/bundled:<id>\`)`,
        agent.parsed.frontMatter.positionOf(`/skills/${index}`),
      );
    }
    if (base_model !== undefined) deferred.push({ path: agent.file.path, field: 'base_model', kind: 'model' });
  }
}

interface AgentFrontMatter {
  agent_type: AgentType;
  description?: string;
  base_model?: string;
  skills?: string[];
}

/** The front matter of an agent whose file passed its schema. */
function frontMatterOf(agent: Agent): AgentFrontMatter {
  return agent.parsed.frontMatter.value as AgentFrontMatter;
}

function factoryOf(value: unknown, agents: Agent[]): FactoryFile {
  const factory = value as { name: string; description: string; instructions?: string };
  return {
    name: factory.name,
    description: factory.description.trim(),
    instructions: (factory.instructions ?? '').trim(),
    agents: [...agents]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((agent): FactoryFileAgent => {
        const meta = frontMatterOf(agent);
        return {
          name: agent.name,
          agent_type: meta.agent_type,
          description: meta.description?.trim() || null,
          prompt: agent.parsed.prompt || null,
          base_model: meta.base_model ?? null,
          skills: meta.skills ?? [],
        };
      }),
  };
}

function byPlace(a: Diagnostic, b: Diagnostic): number {
  return a.path.localeCompare(b.path) || a.line - b.line || a.column - b.column;
}
