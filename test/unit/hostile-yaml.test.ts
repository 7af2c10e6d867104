import { Document, parse, visit } from 'yaml';
import { parseFactoryFile } from '../../core/factory-file';
import { validateFactoryTree, type TreeFile } from '../../core/factory-tree/validate-tree';
import { MAX_YAML_DEPTH, yamlDepthExcess } from '../../core/yaml-depth';
import { parseSkillFile, SkillFormatError } from '../../services/skills/skill-files';
import {
  ALIAS_BOMB,
  DEEP_FLOW,
  DEEP_FRONT_MATTER,
  deepInputs,
  hostileMarkdown,
  hugeInputs,
  seededRandom,
  SHALLOW_LOOKALIKES,
  yamlSoup,
} from '../helpers/hostile-yaml';

/**
 * The fuzz test of every parser of YAML nobody vouched for (issue 42): factory.yaml and agent.md
 * (the validator), FACTORY.md, SKILL.md. Before the depth check, the deep inputs overflowed the
 * `yaml` library's stack, and now and then V8 aborted the whole process while compiling a
 * regexp at the edge of it; the alias bomb and the huge inputs must stay bounded too.
 */

const TOO_DEEP = new RegExp(`deeper than ${MAX_YAML_DEPTH} levels`);
const allowAll = () => true;

interface Outcome {
  /** Every message the parser gave. */
  messages: string[];
  tooDeep: boolean;
}

/** The same text through the four doors: a factory.yaml, an agent.md's and a FACTORY.md's front matter, a SKILL.md's. */
function throughEveryParser(yaml: string): Record<string, Outcome> {
  const tree = (files: TreeFile[]): Outcome => {
    const { diagnostics } = validateFactoryTree(files, allowAll).validation;
    return {
      messages: diagnostics.map((d) => `${d.code} ${d.message}`),
      tooDeep: diagnostics.some((d) => d.code === 'FF_YAML_LIMIT' && TOO_DEEP.test(d.message)),
    };
  };
  const frontMatter = `---\n${yaml}\n---\nThe prompt.\n`;
  const factoryFile = parseFactoryFile(frontMatter);
  const messages = factoryFile.ok ? [] : factoryFile.errors.map((e) => e.message);
  let skill: Outcome;
  try {
    parseSkillFile(frontMatter, 'SKILL.md');
    skill = { messages: [], tooDeep: false };
  } catch (err) {
    if (!(err instanceof SkillFormatError)) throw err;
    skill = { messages: [err.message], tooDeep: TOO_DEEP.test(err.message) };
  }
  return {
    'factory.yaml': tree([{ path: 'factory.yaml', content: yaml }]),
    'agent.md': tree([
      { path: 'factory.yaml', content: 'name: team\ndescription: x\n' },
      { path: 'agents/lead/agent.md', content: frontMatter },
    ]),
    'FACTORY.md': { messages, tooDeep: messages.some((m) => TOO_DEEP.test(m)) },
    'SKILL.md': skill,
  };
}

/** What must hold of any answer: no message of a stack that ran out, no exception (the call returned). */
function expectComposed(outcomes: Record<string, Outcome>): void {
  for (const [door, { messages }] of Object.entries(outcomes)) {
    expect({ door, messages: messages.filter((m) => /call stack|RangeError|too much recursion/i.test(m)) }).toEqual({
      door,
      messages: [],
    });
  }
}

test("the red team's inputs, again and again: a clear FF_YAML_LIMIT naming the limit, never a stack that ran out", () => {
  for (let round = 0; round < 20; round++) {
    const { validation } = validateFactoryTree(
      [
        { path: 'factory.yaml', content: round % 2 ? DEEP_FLOW : ALIAS_BOMB },
        { path: 'agents/a/agent.md', content: DEEP_FRONT_MATTER },
      ],
      allowAll,
    );
    expect(validation.diagnostics.map((d) => [d.path, d.code])).toEqual([
      ['agents/a/agent.md', 'FF_YAML_LIMIT'],
      ['factory.yaml', 'FF_YAML_LIMIT'],
    ]);
    expect(validation.diagnostics[0]).toEqual(
      expect.objectContaining({ line: 2, column: 3 + MAX_YAML_DEPTH, message: expect.stringMatching(TOO_DEEP) }),
    );
    expect(validation.diagnostics[1]!.message).toMatch(round % 2 ? TOO_DEEP : /excessive alias count/i);
  }
});

test.each(Object.entries(deepInputs()))(
  'nested far too deep (%s): refused before the parser sees it, in every parser',
  (_, yaml) => {
    expect(yamlDepthExcess(yaml)).toBeDefined();
    const outcomes = throughEveryParser(yaml);
    expectComposed(outcomes);
    // A `---` line inside ends a front matter early: only the factory.yaml sees all of it.
    const doors = /\n---/.test(yaml) ? ['factory.yaml'] : Object.keys(outcomes);
    expect(doors.filter((door) => !outcomes[door]!.tooDeep)).toEqual([]);
  },
);

test.each(Object.entries(SHALLOW_LOOKALIKES))(
  'brackets and dashes that nest nothing (%s) are not counted',
  (_, yaml) => {
    expect(yamlDepthExcess(yaml)).toBeUndefined();
    const outcomes = throughEveryParser(yaml);
    expectComposed(outcomes);
    expect(Object.entries(outcomes).filter(([, outcome]) => outcome.tooDeep)).toEqual([]);
  },
);

test.each(Object.entries(hugeInputs(128 * 1024)))(
  'huge and flat (%s): parsed to an answer, within the file limit',
  (_, yaml) => {
    expect(yaml.length).toBeLessThan(256 * 1024);
    expectComposed(throughEveryParser(yaml));
  },
);

test.each(Object.entries(hostileMarkdown(128 * 1024)))(
  'markdown built to trip the front matter patterns (%s): an answer from every parser',
  (_, markdown) => {
    const { diagnostics } = validateFactoryTree(
      [
        { path: 'factory.yaml', content: 'name: team\ndescription: x\n' },
        { path: 'agents/lead/agent.md', content: markdown },
      ],
      allowAll,
    ).validation;
    expect(diagnostics.length).toBeGreaterThan(0);
    expect(parseFactoryFile(markdown).ok).toBe(false);
    expect(() => parseSkillFile(markdown, 'SKILL.md')).toThrow(SkillFormatError);
  },
);

test('a key repeated in a huge mapping is found in one pass, at its line', () => {
  const keys = Array.from({ length: 20_000 }, (_, i) => `k${i}: ${i}`).join('\n');
  const parsed = parseFactoryFile(`---\n${keys}\nk7: again\n---\n`);
  expect(parsed.ok ? [] : parsed.errors).toEqual([
    { path: 'front_matter', message: expect.stringMatching(/^YAML error at line 20002, column 1: duplicate key "k7"/) },
  ]);
});

test('a seeded soup of YAML punctuation: every parser answers with data, never a stack that ran out', () => {
  const random = seededRandom(42);
  for (let i = 0; i < 300; i++) {
    const yaml = yamlSoup(random, i % 30 === 0 ? 64 * 1024 : 1 + Math.floor(random() * 4096));
    expectComposed(throughEveryParser(yaml));
  }
});

test('on documents the library writes, in every style, the check counts the real depth or one more, never less', () => {
  const random = seededRandom(7);
  const pick = (n: number) => Math.floor(random() * n);
  const counted = (text: string) => {
    let max = 0;
    while (yamlDepthExcess(text, max)) max++;
    return max;
  };
  for (let i = 0; i < 200; i++) {
    const doc = new Document(nested(random, 1 + pick(90)));
    // Block collections, flow ones (a flow collection holds only flow ones), and both.
    const flowShare = [0, 1, 0.05][pick(3)]!;
    visit(doc, { Collection: (_, node) => void (node.flow = random() < flowShare) });
    const text = doc.toString({ indent: 1 + pick(4), indentSeq: random() < 0.5 });
    const real = depthOf(parse(text) as unknown);
    expect([real, real + 1]).toContain(counted(text));
    // At the limit: refused exactly when the parser would compose more than it.
    if (real > MAX_YAML_DEPTH) expect(yamlDepthExcess(text)).toBeDefined();
    if (real < MAX_YAML_DEPTH) expect(yamlDepthExcess(text)).toBeUndefined();
  }
});

/** A random value with one path `depth` collections deep and shallow siblings along it. */
function nested(random: () => number, depth: number): unknown {
  const pick = (n: number) => Math.floor(random() * n);
  if (depth === 0) return ['x', 1, 'a b', "it's", '[', true, null][pick(7)];
  const size = 1 + pick(3);
  const deep = pick(size);
  const item = (i: number) => nested(random, i === deep ? depth - 1 : pick(Math.min(2, depth)));
  if (random() < 0.5) return Array.from({ length: size }, (_, i) => item(i));
  return Object.fromEntries(Array.from({ length: size }, (_, i) => [`k${i}`, item(i)]));
}

/** How many collections deep a value is, without recursion (the values here are only ~90 deep, but still). */
function depthOf(root: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') {
      max = Math.max(max, depth);
      continue;
    }
    max = Math.max(max, depth + 1);
    for (const child of Object.values(value as object)) stack.push([child, depth + 1]);
  }
  return max;
}
