import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';
import { tooDeepMessage, yamlDepthExcess } from '../yaml-depth';

/** A 1-based place in a file. */
export interface SourcePosition {
  line: number;
  column: number;
}

export interface YamlError {
  position: SourcePosition;
  message: string;
  /** Set when the text is beyond what this service parses (depth, aliases), not malformed. */
  limit?: true;
}

export type YamlSource =
  | { ok: true; value: unknown; positionOf: (pointer: string, key?: boolean) => SourcePosition }
  | { ok: false; errors: YamlError[] };

/**
 * Aliases (`*name`) a document may hold, and expand (the library's `maxAliasCount`): a handful
 * can otherwise make a billion nodes, and the library looks each one up by a walk of the
 * document, so twenty thousand of them cost minutes.
 */
export const MAX_YAML_ALIASES = 100;

/**
 * Parses YAML text that starts at line `firstLine` of its file, keeping where each value is, so
 * a schema error at a JSON pointer (`/agents/0/name`) can say its line and column. The one
 * parser of YAML nobody vouched for (factory trees, FACTORY.md, SKILL.md): the depth is checked
 * before the library sees the text, aliases are capped and keys compared in one pass, so what
 * it costs grows with the text's size alone.
 */
export function parseYamlSource(text: string, firstLine = 1): YamlSource {
  const deep = yamlDepthExcess(text);
  if (deep) {
    const position = { line: deep.line + firstLine - 1, column: deep.column };
    return { ok: false, errors: [{ position, message: tooDeepMessage(), limit: true }] };
  }
  const lines = new LineCounter();
  // The library's own unique-key check compares every pair of keys: quadratic in what a caller sends.
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false, prettyErrors: false });
  const at = (offset: number): SourcePosition => {
    const { line, col } = lines.linePos(offset);
    return { line: line + firstLine - 1, column: col };
  };
  const errors: YamlError[] = doc.errors.map((error) => ({ position: at(error.pos[0]), message: error.message }));
  if (!errors.length) errors.push(...keyAndAliasErrors(doc, at));
  if (errors.length) return { ok: false, errors: errors.slice(0, 10) };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (err) {
    const message = (err as Error).message;
    return {
      ok: false,
      errors: [{ position: at(0), message, ...(/excessive alias/i.test(message) && { limit: true }) }],
    };
  }
  return { ok: true, value, positionOf: (pointer, key = false) => at(offsetOf(doc, pointer, key)) };
}

/**
 * Where the value at `pointer` starts (or its key, with `key`); the nearest enclosing value that
 * exists when the pointer leads nowhere (a missing field is reported at its mapping).
 */
function offsetOf(doc: Document, pointer: string, key: boolean): number {
  const segments = pointer === '' ? [] : pointer.slice(1).split('/').map(unescapePointer);
  let node: unknown = doc.contents;
  let offset = rangeStart(node) ?? 0;
  for (const [i, segment] of segments.entries()) {
    const last = i === segments.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === segment);
      if (!pair) return offset;
      if (last && key) return rangeStart(pair.key as Node) ?? offset;
      node = pair.value;
    } else if (isSeq(node)) {
      node = node.items[Number(segment)];
    } else {
      return offset;
    }
    offset = rangeStart(node) ?? offset;
  }
  return offset;
}

/**
 * Keys that repeat in a mapping, each where it repeats (one pass, a set per mapping), and the
 * alias past MAX_YAML_ALIASES, before the library resolves any.
 */
function keyAndAliasErrors(doc: Document, at: (offset: number) => SourcePosition): YamlError[] {
  const errors: YamlError[] = [];
  let aliases = 0;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : JSON.stringify(pair.key);
        if (seen.has(key)) {
          const message = `duplicate key "${key.slice(0, 80)}"; a key may appear once in a mapping`;
          errors.push({ position: at(rangeStart(pair.key) ?? 0), message });
        }
        seen.add(key);
      }
    },
    Alias(_, alias) {
      if (++aliases <= MAX_YAML_ALIASES) return undefined;
      const message = `more than ${MAX_YAML_ALIASES} aliases (\`*${alias.source.slice(0, 80)}\`); write the values out`;
      errors.push({ position: at(rangeStart(alias) ?? 0), message, limit: true });
      return visit.BREAK;
    },
  });
  return errors;
}

function rangeStart(node: unknown): number | undefined {
  return (node as { range?: [number, number, number] } | null)?.range?.[0];
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
