import type { AgentType } from './agent-types';

/** What a FACTORY.md may hold: its limits, the fields it takes, and what core/factory-file.ts parses it into. */

export const FACTORIES_DIR = '.agents/factories';
export const FACTORY_FILE_NAME = 'FACTORY.md';
export const MAX_FACTORY_FILE_BYTES = 256 * 1024;
export const MAX_FACTORY_AGENTS = 20;
export const MAX_FACTORY_PROMPT_CHARS = 100_000;
export const MAX_FACTORY_INSTRUCTIONS_CHARS = 100_000;
export const MAX_FACTORY_NAME_CHARS = 64;
export const MAX_FACTORY_DESCRIPTION_CHARS = 2000;
export const MAX_AGENT_SKILLS = 50;
export const MAX_BASE_MODEL_CHARS = 200;

export const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SLUG_RULE = `must be lowercase letters, digits and single hyphens (e.g. \`review-team\`), at most ${MAX_FACTORY_NAME_CHARS} characters`;
export const FACTORY_PATH_RE = /^\.agents\/factories\/([^/]+)\/FACTORY\.md$/;
export const TOP_FIELDS = ['name', 'description', 'agents'] as const;
export const AGENT_FIELDS = ['name', 'agent_type', 'description', 'prompt', 'base_model', 'skills'] as const;

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
