import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';

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
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const at = (offset: number): SourcePosition => {
    const { line, col } = lines.linePos(offset);
    return { line: line + firstLine - 1, column: col };
  };
  if (doc.errors.length) {
    return {
      ok: false,
      errors: doc.errors.slice(0, 10).map((error) => ({ position: at(error.pos[0]), message: error.message })),
    };
  }
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

function rangeStart(node: unknown): number | undefined {
  return (node as { range?: [number, number, number] } | null)?.range?.[0];
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
