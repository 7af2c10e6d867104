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

/** Collects a file's diagnostics. */
export function diagnosticsOf(path: string, into: Diagnostic[]) {
  return (code: DiagnosticCode, message: string, at: SourcePosition = FILE_START): void => {
    into.push({ code, path, line: at.line, column: at.column, message });
  };
}

export type Report = ReturnType<typeof diagnosticsOf>;
