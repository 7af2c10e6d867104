import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';

/** A 1-based place in a file. */
export interface SourcePosition {
  line: number;
  column: number;
}

export type YamlSource =
  | { ok: true; value: unknown; positionOf: (pointer: string, key?: boolean) => SourcePosition }
  | { ok: false; errors: { position: SourcePosition; message: string }[] };

/** Aliases a document may expand; a handful of them can otherwise make a billion nodes. */
const MAX_ALIASES = 100;

/**
 * Parses YAML text that starts at line `firstLine` of its file, keeping where each value is, so
 * a schema error at a JSON pointer (`/agents/0/name`) can say its line and column.
 */
export function parseYamlSource(text: string, firstLine = 1): YamlSource {
  const lines = new LineCounter();
  // The library's own unique-key check compares every pair of keys: quadratic in what a caller sends.
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false, prettyErrors: false });
  const at = (offset: number): SourcePosition => {
    const { line, col } = lines.linePos(offset);
    return { line: line + firstLine - 1, column: col };
  };
  const errors = doc.errors.map((error) => ({ position: at(error.pos[0]), message: error.message }));
  if (!errors.length)
    errors.push(
      ...duplicateKeys(doc).map(({ offset, key }) => ({
        position: at(offset),
        message: `duplicate key "${key}"; a key may appear once in a mapping`,
      })),
    );
  if (errors.length) return { ok: false, errors: errors.slice(0, 10) };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    return { ok: false, errors: [{ position: at(0), message: (err as Error).message }] };
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

/** Keys that repeat in a mapping, each where it repeats; one pass with a set per mapping. */
function duplicateKeys(doc: Document): { offset: number; key: string }[] {
  const found: { offset: number; key: string }[] = [];
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : JSON.stringify(pair.key);
        if (seen.has(key)) found.push({ offset: rangeStart(pair.key) ?? 0, key: key.slice(0, 80) });
        seen.add(key);
      }
    },
  });
  return found;
}

function rangeStart(node: unknown): number | undefined {
  return (node as { range?: [number, number, number] } | null)?.range?.[0];
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
