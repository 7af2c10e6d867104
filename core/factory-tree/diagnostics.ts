import type { SourcePosition } from './yaml-source';

/** The stable codes of the factory tree validator's diagnostics (documented in docs/guide/factories.md). */
export const DIAGNOSTIC_CODES = {
  invalidPath: 'FF_INVALID_PATH',
  duplicatePath: 'FF_DUPLICATE_PATH',
  unknownFile: 'FF_UNKNOWN_FILE',
  missingFactoryFile: 'FF_MISSING_FACTORY_FILE',
  multipleFactoryFiles: 'FF_MULTIPLE_FACTORY_FILES',
  invalidAgentName: 'FF_INVALID_AGENT_NAME',
  fileTooLarge: 'FF_FILE_TOO_LARGE',
  invalidEncoding: 'FF_INVALID_ENCODING',
  yamlSyntax: 'FF_YAML_SYNTAX',
  yamlLimit: 'FF_YAML_LIMIT',
  parseLimit: 'FF_PARSE_LIMIT',
  missingFrontMatter: 'FF_MISSING_FRONT_MATTER',
  unsupportedSchemaVersion: 'FF_UNSUPPORTED_SCHEMA_VERSION',
  unknownField: 'FF_UNKNOWN_FIELD',
  missingField: 'FF_MISSING_FIELD',
  invalidType: 'FF_INVALID_TYPE',
  invalidValue: 'FF_INVALID_VALUE',
  nameMismatch: 'FF_NAME_MISMATCH',
  noAgents: 'FF_NO_AGENTS',
  tooManyAgents: 'FF_TOO_MANY_AGENTS',
  noForeman: 'FF_NO_FOREMAN',
  multipleForemen: 'FF_MULTIPLE_FOREMEN',
  promptTooLong: 'FF_PROMPT_TOO_LONG',
  skillNotAllowed: 'FF_SKILL_NOT_ALLOWED',
  moreDiagnostics: 'FF_MORE_DIAGNOSTICS',
} as const;

export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[keyof typeof DIAGNOSTIC_CODES];

/** A problem in one file of a factory tree, where it is and what to do about it. */
export interface Diagnostic {
  code: DiagnosticCode;
  path: string;
  line: number;
  column: number;
  message: string;
}

export const FILE_START: SourcePosition = { line: 1, column: 1 };

/** How many diagnostics a file, and a whole tree, may get: input nobody authenticated must not buy an unbounded answer. */
export const MAX_DIAGNOSTICS_PER_FILE = 50;
export const MAX_DIAGNOSTICS = 200;

/** Diagnostics left out per file, for the lists diagnosticsOf fills. */
const leftOut = new WeakMap<Diagnostic[], Map<string, number>>();

export interface Report {
  (code: DiagnosticCode, message: string, at?: SourcePosition): void;
  /** Whether nothing more of this file would be listed (so a caller may stop looking). */
  full(): boolean;
}

/** Collects a file's diagnostics into `into`, up to the caps; the rest are counted (moreDiagnostics). */
export function diagnosticsOf(path: string, into: Diagnostic[]): Report {
  const full = () =>
    into.length >= MAX_DIAGNOSTICS || into.filter((d) => d.path === path).length >= MAX_DIAGNOSTICS_PER_FILE;
  const report = (code: DiagnosticCode, message: string, at: SourcePosition = FILE_START): void => {
    if (full()) {
      const counts = leftOut.get(into) ?? new Map<string, number>();
      counts.set(path, (counts.get(path) ?? 0) + 1);
      leftOut.set(into, counts);
      return;
    }
    into.push({ code, path, line: at.line, column: at.column, message });
  };
  return Object.assign(report, { full });
}

/** One FF_MORE_DIAGNOSTICS per file whose diagnostics were not all listed, saying how many were not. */
export function leftOutDiagnostics(into: Diagnostic[]): Diagnostic[] {
  return [...(leftOut.get(into) ?? [])].map(([path, count]) => ({
    code: DIAGNOSTIC_CODES.moreDiagnostics,
    path,
    ...FILE_START,
    message: `${count} more problem${count === 1 ? '' : 's'} of this file ${count === 1 ? 'is' : 'are'} not listed; fix these and validate again`,
  }));
}

/** Where a diagnostic is, as notices and the agent's tool name it: `path:line:column`. */
export function diagnosticPlace(d: Diagnostic): string {
  return `${d.path}:${d.line}:${d.column}`;
}
