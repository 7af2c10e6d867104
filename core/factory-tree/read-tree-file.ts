import { MAX_FACTORY_FILE_BYTES } from '../factory-file-format';
import { DIAGNOSTIC_CODES, type Report } from './diagnostics';
import { parseYamlSource, type SourcePosition } from './yaml-source';

export interface ParsedYaml {
  value: unknown;
  positionOf: (pointer: string, key?: boolean) => SourcePosition;
}

/** Size and encoding: what every file of a tree must pass before it is parsed. */
function readable(content: string, report: Report): boolean {
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > MAX_FACTORY_FILE_BYTES) {
    report(
      DIAGNOSTIC_CODES.fileTooLarge,
      `is ${bytes} bytes; a factory file may be at most ${MAX_FACTORY_FILE_BYTES} bytes (256 KiB)`,
    );
    return false;
  }
  if (content.includes('\u0000')) {
    report(DIAGNOSTIC_CODES.invalidEncoding, 'contains NUL characters; factory files are UTF-8 text');
    return false;
  }
  return true;
}

function parseYaml(text: string, firstLine: number, report: Report): ParsedYaml | undefined {
  const parsed = parseYamlSource(text, firstLine);
  if (!parsed.ok) {
    for (const error of parsed.errors) {
      const code = error.limit ? DIAGNOSTIC_CODES.yamlLimit : DIAGNOSTIC_CODES.yamlSyntax;
      report(code, `YAML: ${error.message}`, error.position);
    }
    return undefined;
  }
  return parsed;
}

/** A `factory.yaml`, parsed with the places of its values. */
export function readFactoryYaml(content: string, report: Report): ParsedYaml | undefined {
  return readable(content, report) ? parseYaml(content, 1, report) : undefined;
}

export interface ParsedAgentFile {
  frontMatter: ParsedYaml;
  /** The markdown after the front matter, trimmed: the agent's prompt. */
  prompt: string;
  promptAt: SourcePosition;
}

const FRONT_MATTER_RE = /^(\uFEFF?---\r?\n)([\s\S]*?\r?\n)?---[ \t]*(?:\r?\n([\s\S]*))?$/;

/** An `agent.md`: YAML front matter between two `---` lines, then the prompt. */
export function readAgentFile(content: string, report: Report): ParsedAgentFile | undefined {
  if (!readable(content, report)) return undefined;
  const match = FRONT_MATTER_RE.exec(content);
  if (!match) {
    report(
      DIAGNOSTIC_CODES.missingFrontMatter,
      "must start with YAML front matter between two `---` lines (agent_type, and description, base_model, skills if wanted), followed by the agent's prompt in markdown",
    );
    return undefined;
  }
  const yamlText = match[2] ?? '';
  const frontMatter = parseYaml(yamlText, 2, report);
  if (!frontMatter) return undefined;
  const body = match[3] ?? '';
  const bodyLine = 2 + lineCount(yamlText) + 1;
  const leading = /^\s*/.exec(body)![0];
  return { frontMatter, prompt: body.trim(), promptAt: { line: bodyLine + lineCount(leading), column: 1 } };
}

function lineCount(text: string): number {
  return (text.match(/\n/g) ?? []).length;
}
