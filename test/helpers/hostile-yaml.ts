/**
 * YAML and markdown built to make a parser fall over: nesting (flow, block, compact, explicit
 * keys, mixed), alias bombs, sizes at the limits, and a seeded soup of YAML's own punctuation.
 * The fuzz test (test/unit/hostile-yaml.test.ts) and the endpoint's (test/hostile-yaml.test.ts)
 * both read them.
 */

/** The red team's inputs (issue 42): fifty thousand `[`, and an alias bomb of 9 · 4^20 nodes. */
export const DEEP_FLOW = `name: ${'['.repeat(50_000)}${']'.repeat(50_000)}`;
export const ALIAS_BOMB = [
  'a: &a [x,x,x,x,x,x,x,x,x]',
  ...Array.from({ length: 20 }, (_, i) => {
    const [name, prev] = [String.fromCharCode(98 + i), String.fromCharCode(97 + i)];
    return `${name}: &${name} [*${prev},*${prev},*${prev},*${prev}]`;
  }),
].join('\n');
export const DEEP_FRONT_MATTER = `---\nx: ${'{'.repeat(50_000)}${'}'.repeat(50_000)}\n---\nhello`;

/** Inputs that nest far deeper than any limit, each built another way. */
export function deepInputs(levels = 5_000): Record<string, string> {
  // Indentation grows with depth: 700 levels are 245,000 characters.
  const steps = Math.min(levels, 700);
  const staircase = (line: (i: number) => string, join = '\n', count = steps) =>
    Array.from({ length: count }, (_, i) => line(i)).join(join);
  return {
    'flow sequences': `a: ${'['.repeat(levels)}${']'.repeat(levels)}`,
    'flow mappings': `a: ${'{a: '.repeat(levels)}b${'}'.repeat(levels)}`,
    'flow, mixed and unclosed': `a: ${'[{'.repeat(levels)}`,
    'flow keys': `${'{'.repeat(levels)}`,
    'compact sequences': `${'- '.repeat(levels)}x`,
    'explicit keys': `${'? '.repeat(levels)}x`,
    'explicit values': staircase((i) => `${' '.repeat(i)}? k\n${' '.repeat(i)}:`, '\n', steps / 2),
    'indented mappings': staircase((i) => `${' '.repeat(i)}k${i}:`),
    'sequences at their mapping column': staircase((i) => `${' '.repeat(2 * i)}- k:`, '\n', steps / 2),
    'anchors and tags between indicators': `${'- &a !t '.repeat(levels)}x`,
    'flow after a block staircase': `${Array.from({ length: 40 }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n')} ${'['.repeat(levels)}`,
    'behind a comment line': `# [[[[\na: ${'['.repeat(levels)}`,
    'after a block scalar': `a: |\n  text\nb: ${'['.repeat(levels)}`,
    'after a multi-line plain scalar with a quote': `x: a\n  'b\ny: ${'['.repeat(levels)}\nz: '`,
    'a second document': `a: 1\n---\nb: ${'['.repeat(levels)}`,
    'CRLF lines': staircase((i) => `${' '.repeat(i)}k${i}:`, '\r\n'),
    'unclosed flows continued on indented lines': unclosedFlows('\n '),
  };
}

/** Inputs that look deep to a careless count and are not: brackets in scalars and comments. */
export const SHALLOW_LOOKALIKES: Record<string, string> = {
  'brackets in double quotes': `name: "${'['.repeat(5_000)}"\ndescription: "\\"${'{'.repeat(5_000)}"`,
  'brackets in single quotes': `name: '${'['.repeat(5_000)}'''\ndescription: x`,
  'brackets in a comment': `name: x # ${'['.repeat(5_000)}\ndescription: y`,
  'brackets in a block scalar': `name: x\ndescription: |\n  ${'['.repeat(5_000)}\n  ${'- '.repeat(2_000)}\n`,
  'brackets in a plain scalar': `name: x\ndescription: it's ${'['.repeat(10)} plain`,
  'dashes in a plain scalar': `name: x\ndescription: a ${'- '.repeat(5_000)}b`,
  // The lexer ends a flow collection that the next line is not indented into: no line nests in another.
  'unclosed flows, each ended by the next line': unclosedFlows('\n', 50),
};

function unclosedFlows(separator: string, lines = 200): string {
  return Array.from({ length: lines }, (_, i) => `a${i}: ${'['.repeat(60)}`).join(separator);
}

/** Large and flat: every key once (a pairwise key check is quadratic), a long list, a long line. */
export function hugeInputs(bytes = 250 * 1024): Record<string, string> {
  const lines = (make: (i: number) => string) => {
    const out: string[] = [];
    for (let i = 0, size = 0; size < bytes; i++) {
      out.push(make(i));
      size += out.at(-1)!.length + 1;
    }
    return out.join('\n');
  };
  return {
    'many keys': lines((i) => `k${i}: ${i}`),
    'many list items': `name: x\nitems:\n${lines((i) => `  - ${i}`)}`,
    'one flow list': `name: [${Array.from({ length: bytes / 2 }, () => '1').join(',')}]`,
    'many documents': lines((i) => `--- ${i}`),
    'a long plain scalar over many lines': `description: ${lines(() => '  word')}`,
    'many anchors and aliases': lines((i) => `k${i}: &a${i} [*a${Math.max(0, i - 1)}]`),
  };
}

/** Whole agent.md, FACTORY.md or SKILL.md files built to trip the patterns that find a front matter. */
export function hostileMarkdown(bytes = 250 * 1024): Record<string, string> {
  const fill = (unit: string) => unit.repeat(Math.floor(bytes / unit.length));
  return {
    'never closed, and many lines starting ---': `---\n${fill('a\n---x')}`,
    'never closed, --- and blanks before a letter': `---\n${fill(`\n---${' \t'.repeat(20)}x`)}`,
    'carriage returns and dashes': `---\n${fill('\r\r\n-')}`,
    'a prompt of --- lines': `---\nagent_type: FOREMAN\n---\n${fill('---\n')}`,
    'only dashes': fill('-'),
    'front matter after front matter': fill('---\nagent_type: FOREMAN\n'),
    'a prompt of brackets': `---\nagent_type: FOREMAN\n---\n${fill('[{')}`,
  };
}

/** A seeded generator (mulberry32): the same soup on every run, so a failure can be replayed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  '[',
  ']',
  '{',
  '}',
  '- ',
  '? ',
  ': ',
  ',',
  '"',
  "'",
  '#',
  '|',
  '>',
  '&a ',
  '*a',
  '!t ',
  '\n',
  '  ',
  'k',
  '---\n',
  '\\',
];

/** Text of YAML's punctuation in random order, biased to open more than it closes. */
export function yamlSoup(random: () => number, length: number): string {
  let text = '';
  while (text.length < length) {
    const piece = PIECES[Math.floor(random() * PIECES.length)]!;
    text += random() < 0.3 && (piece === ']' || piece === '}') ? '[' : piece;
  }
  return text;
}
