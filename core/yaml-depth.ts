import { CST, Lexer } from 'yaml';

/**
 * How deep YAML that nobody vouched for may nest collections. The `yaml` library composes a
 * document recursively, a few calls per level: some thousands of `[` overflow its stack, and a
 * regexp V8 must compile at the edge of the stack aborts the whole process. Like a request
 * body's JSON (MAX_JSON_DEPTH), no file of the formats needs a tenth of it.
 */
export const MAX_YAML_DEPTH = 64;

/** A 1-based place in the text that was measured. */
export interface DepthExcess {
  line: number;
  column: number;
}

/** An open block collection: where its items start, and whether it is a sequence. */
interface Block {
  column: number;
  seq: boolean;
}

/** The message every parser of untrusted YAML gives when yamlDepthExcess finds something. */
export function tooDeepMessage(max = MAX_YAML_DEPTH): string {
  return `nests collections deeper than ${max} levels (each \`[\`, \`{\`, \`- \` item and indented mapping is one); flatten it`;
}

/**
 * Where YAML text first nests collections deeper than `max`, or undefined: one pass over the
 * library's own tokens, without recursion, before its parser sees the text. Tokens say what is
 * a quoted or block scalar and what is a comment, as the parser will read them, so brackets in
 * those do not count. Each flow `[`/`{` is a level, and each block collection, told apart by
 * its column: indentation, and `- `, `? ` and `: ` indicators (several on one line too). It may
 * count a level more than the document has (a scalar after `- `); it is meant to stop
 * thousands of levels, not to tell 64 from 65.
 */
export function yamlDepthExcess(text: string, max = MAX_YAML_DEPTH): DepthExcess | undefined {
  const blocks: Block[] = [];
  let flow = 0;
  let offset = 0;
  let line = 1;
  let lineStart = 0;
  let lineFirst = true;
  let afterIndicator = false;
  let scalarNext = false;
  let blockScalar = false;
  const here = (): DepthExcess => ({ line, column: offset - lineStart + 1 });
  const advance = (token: string): void => {
    offset += token.length;
    const lastNewline = token.lastIndexOf('\n');
    if (lastNewline === -1) return;
    for (let i = token.indexOf('\n'); i !== -1; i = token.indexOf('\n', i + 1)) line++;
    lineStart = offset - token.length + lastNewline + 1;
  };
  const enterBlock = (seq: boolean): boolean => {
    const column = offset - lineStart;
    let top = blocks.at(-1);
    while (top && (top.column > column || (top.column === column && top.seq && !seq))) {
      blocks.pop();
      top = blocks.at(-1);
    }
    // A sequence may sit at its mapping's column (`key:` then `- item`): one level more.
    if (!top || top.column < column || (seq && !top.seq)) blocks.push({ column, seq });
    return blocks.length + flow > max;
  };
  for (const token of new Lexer().lex(text)) {
    const type: string | null = scalarNext ? 'scalar-source' : CST.tokenType(token);
    scalarNext = type === 'scalar';
    // Markers the lexer adds, not characters of the text.
    if (type === 'scalar' || type === 'doc-mode') continue;
    if (type === 'flow-error-end') {
      flow = 0;
      continue;
    }
    if (type === 'block-scalar-header') blockScalar = true;
    if (type === 'scalar-source' && blockScalar) {
      // A `|` or `>` scalar's lines: text, at the start of its first line, ending at a line start.
      blockScalar = false;
      advance(token);
      continue;
    }
    const opens: boolean = flow === 0 && opensBlock(type, lineFirst || afterIndicator);
    if (opens && (type === 'doc-start' || type === 'doc-end')) blocks.length = 0;
    else if (opens && enterBlock(type === 'seq-item-ind')) return here();
    if (flow === 0 && type !== 'space' && type !== 'newline' && type !== 'comment') {
      lineFirst = false;
      // `: ` opens an item only as an explicit key's value; after `key: ` comes a scalar or a flow.
      afterIndicator = type === 'seq-item-ind' || type === 'explicit-key-ind' || (type === 'map-value-ind' && opens);
    }
    if (type === 'flow-seq-start' || type === 'flow-map-start') {
      if (blocks.length + ++flow > max) return here();
    } else if ((type === 'flow-seq-end' || type === 'flow-map-end') && flow > 0) {
      flow--;
    } else if (type === 'newline' && flow === 0) {
      lineFirst = true;
      afterIndicator = false;
    }
    advance(token);
  }
  return undefined;
}

/**
 * Whether a token in block context starts a collection's item: every `- ` and `? ` (also where
 * they are an error: the parser still nests them), and anything else that starts a line or
 * follows an indicator (`- key: value`, `: value` of an explicit key).
 */
function opensBlock(type: string | null, atItemStart: boolean): boolean {
  if (type === 'seq-item-ind' || type === 'explicit-key-ind') return true;
  return atItemStart && type !== 'space' && type !== 'newline' && type !== 'comment' && type !== 'comma';
}
