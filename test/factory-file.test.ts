import {
  checkFactoryFile,
  disallowedSkills,
  MAX_FACTORY_FILE_BYTES,
  parseFactoryFile,
  type FactoryFileProblem,
  type FactoryFileResult,
} from '../core/factory-file';

/** The FACTORY.md parser: what it accepts, and every problem it reports, each with its path. */

const PATH = '.agents/factories/review-team/FACTORY.md';

const VALID = `---
name: review-team
description: Reviews a change and fixes what the review finds
agents:
  - name: lead
    agent_type: FOREMAN
    description: Splits the work and checks the results
    prompt: |
      You lead the review team.
  - name: fixer
    agent_type: IMPLEMENT
    base_model: anthropic/claude-sonnet-4
    skills:
      - acme/tools:lint
      - acme/tools:docs/style/SKILL.md
  - name: checker
    agent_type: VERIFY
---

# Review team

Every change gets a test.
`;

function errorsOf(result: FactoryFileResult): FactoryFileProblem[] {
  if (result.ok) throw new Error(`expected errors, got a factory: ${JSON.stringify(result.factory)}`);
  return result.errors;
}

const frontMatter = (yaml: string, body = '') => `---\n${yaml}\n---\n${body}`;

test('a valid file: the front matter and the body as instructions, absent fields as null or empty', () => {
  expect(parseFactoryFile(VALID, PATH)).toEqual({
    ok: true,
    factory: {
      name: 'review-team',
      description: 'Reviews a change and fixes what the review finds',
      agents: [
        {
          name: 'lead',
          agent_type: 'FOREMAN',
          description: 'Splits the work and checks the results',
          prompt: 'You lead the review team.',
          base_model: null,
          skills: [],
        },
        {
          name: 'fixer',
          agent_type: 'IMPLEMENT',
          description: null,
          prompt: null,
          base_model: 'anthropic/claude-sonnet-4',
          skills: ['acme/tools:lint', 'acme/tools:docs/style/SKILL.md'],
        },
        { name: 'checker', agent_type: 'VERIFY', description: null, prompt: null, base_model: null, skills: [] },
      ],
      instructions: '# Review team\n\nEvery change gets a test.',
    },
  });
});

test('CRLF line endings, a byte-order mark and a file without a body are fine', () => {
  const crlf = `\uFEFF${VALID.replace(/\n/g, '\r\n')}`;
  const parsed = parseFactoryFile(crlf, PATH);
  expect(parsed.ok && parsed.factory.agents.map((a) => a.name)).toEqual(['lead', 'fixer', 'checker']);
  const bodiless = parseFactoryFile(VALID.slice(0, VALID.indexOf('\n# Review team')).trimEnd(), PATH);
  expect(bodiless.ok && bodiless.factory.instructions).toBe('');
});

test('every problem is reported at once, each with its path', () => {
  const content = frontMatter(`name: Review Team
colour: teal
agents:
  - name: lead
    agent_type: foreman
    extra: 1
  - name: lead
    agent_type: BUILDER
    base_model: gpt-4o
    skills: [tools, acme/tools:lint]
  - name: verifier
    agent_type: VERIFY
    base_model: mistral/large
    prompt: [not, text]
  - just a string`);
  expect(errorsOf(parseFactoryFile(content, PATH)).map((e) => e.path)).toEqual([
    'colour',
    'name',
    'description',
    'agents[0].extra',
    'agents[0].agent_type',
    'agents[1].name',
    'agents[1].agent_type',
    'agents[1].base_model',
    'agents[1].skills[0]',
    'agents[2].prompt',
    'agents[2].base_model',
    'agents[3]',
  ]);
});

test('the messages say what to fix', () => {
  const content = frontMatter(`name: review-team
description: d
agents:
  - name: lead
    agent_type: foreman
  - name: lead
    agent_type: REVIEW
    base_model: mistral/large`);
  const byPath = Object.fromEntries(errorsOf(parseFactoryFile(content, PATH)).map((e) => [e.path, e.message]));
  expect(byPath['agents[0].agent_type']).toContain('write it as FOREMAN');
  expect(byPath['agents[0].agent_type']).toContain('FOREMAN, TRIAGE, SPEC, IMPLEMENT, REVIEW, VERIFY, CUSTOM');
  expect(byPath['agents[1].name']).toBe('"lead" is already the name of agents[0]; agent names are unique in a factory');
  expect(byPath['agents[1].base_model']).toContain('`openai/<model>` or `anthropic/<model>`');
  // A misspelt type may be the foreman: no "no foreman" on top of it.
  expect(byPath.agents).toBeUndefined();
});

test('exactly one FOREMAN', () => {
  const none = frontMatter(`name: review-team
description: d
agents:
  - name: a
    agent_type: IMPLEMENT`);
  expect(errorsOf(parseFactoryFile(none, PATH))).toEqual([
    { path: 'agents', message: expect.stringContaining('no agent has `agent_type: FOREMAN`') },
  ]);
  const two = frontMatter(`name: review-team
description: d
agents:
  - name: a
    agent_type: FOREMAN
  - name: b
    agent_type: REVIEW
  - name: c
    agent_type: FOREMAN`);
  expect(errorsOf(parseFactoryFile(two, PATH))).toEqual([
    { path: 'agents[2].agent_type', message: expect.stringContaining('agents[0] ("a") is already the foreman') },
  ]);
});

test("the name must be a slug equal to the directory's name; the path must be a factory's", () => {
  const elsewhere = errorsOf(parseFactoryFile(VALID, '.agents/factories/reviewers/FACTORY.md'));
  expect(elsewhere).toEqual([{ path: 'name', message: expect.stringContaining('.agents/factories/reviewers/') }]);
  expect(errorsOf(parseFactoryFile(VALID, 'factories/review-team.md'))).toEqual([
    { path: 'path', message: expect.stringContaining('.agents/factories/<name>/FACTORY.md') },
  ]);
  // Without a path, only the name's own rules apply.
  expect(parseFactoryFile(VALID).ok).toBe(true);
  const long = VALID.replace('name: review-team', `name: ${'a'.repeat(65)}`);
  expect(errorsOf(parseFactoryFile(long)).map((e) => e.path)).toEqual(['name']);
});

test('no front matter, broken YAML and a front matter that is not a mapping are front_matter errors', () => {
  expect(errorsOf(parseFactoryFile('# Just markdown\n'))).toEqual([
    { path: 'front_matter', message: expect.stringContaining('YAML front matter between two `---` lines') },
  ]);
  const broken = errorsOf(parseFactoryFile('---\nname: review-team\ndescription: "unterminated\n---\n'));
  expect(broken).toHaveLength(1);
  expect(broken[0]!.path).toBe('front_matter');
  expect(broken[0]!.message).toMatch(/^YAML error at line \d+, column \d+: /);
  const duplicate = errorsOf(parseFactoryFile(frontMatter('name: a\nname: b')));
  expect(duplicate[0]!.message).toContain('duplicate key "name"');
  expect(errorsOf(parseFactoryFile(frontMatter('- a\n- b')))).toEqual([
    { path: 'front_matter', message: 'must be a YAML mapping with name, description and agents' },
  ]);
});

test('size caps: the file, the number of agents, a prompt', () => {
  const huge = `${VALID}\n${'x'.repeat(MAX_FACTORY_FILE_BYTES)}`;
  expect(errorsOf(parseFactoryFile(huge, PATH))).toEqual([
    { path: 'file', message: expect.stringContaining('at most 262144 bytes') },
  ]);
  const agents = Array.from(
    { length: 21 },
    (_, i) => `  - name: a${i}\n    agent_type: ${i === 0 ? 'FOREMAN' : 'CUSTOM'}`,
  ).join('\n');
  expect(
    errorsOf(parseFactoryFile(frontMatter(`name: review-team\ndescription: d\nagents:\n${agents}`), PATH)),
  ).toEqual([{ path: 'agents', message: 'has 21 agents; a factory has at most 20' }]);
  const longPrompt = frontMatter(
    `name: review-team\ndescription: d\nagents:\n  - name: a\n    agent_type: FOREMAN\n    prompt: ${'p'.repeat(100_001)}`,
  );
  expect(errorsOf(parseFactoryFile(longPrompt, PATH))).toEqual([
    { path: 'agents[0].prompt', message: 'is 100001 characters; at most 100000' },
  ]);
});

test('agents must be a non-empty list; required strings must be strings', () => {
  expect(errorsOf(parseFactoryFile(frontMatter('name: review-team\ndescription: d\nagents: []'), PATH))).toEqual([
    { path: 'agents', message: expect.stringContaining('non-empty list') },
  ]);
  expect(errorsOf(parseFactoryFile(frontMatter('name: review-team\ndescription: 42'), PATH))).toEqual([
    { path: 'description', message: expect.stringContaining('must be a string') },
    { path: 'agents', message: expect.stringContaining('is required') },
  ]);
});

test('disallowedSkills names each skill whose owner the operator has not allowed', () => {
  const parsed = parseFactoryFile(VALID, PATH);
  if (!parsed.ok) throw new Error('expected a factory');
  expect(disallowedSkills(parsed.factory, (spec) => spec.startsWith('acme/tools:docs'))).toEqual([
    { path: 'agents[1].skills[0]', message: expect.stringContaining('GIT_ALLOWED_OWNERS does not include acme') },
  ]);
  expect(disallowedSkills(parsed.factory, () => true)).toEqual([]);
});

test('checkFactoryFile: the format first, then the skills; a valid file comes back parsed', () => {
  const parsed = parseFactoryFile(VALID, PATH);
  if (!parsed.ok) throw new Error('expected a factory');
  expect(checkFactoryFile(VALID, PATH, () => true)).toEqual({ valid: true, factory: parsed.factory });
  expect(checkFactoryFile(VALID, PATH, (spec) => !spec.startsWith('acme/tools:lint'))).toEqual({
    valid: false,
    errors: [{ path: 'agents[1].skills[0]', message: expect.stringContaining('GIT_ALLOWED_OWNERS') }],
  });
  // A file with format errors reports those; its skills are not judged yet.
  expect(checkFactoryFile(VALID, '.agents/factories/other/FACTORY.md', () => false)).toEqual({
    valid: false,
    errors: [{ path: 'name', message: expect.stringContaining('must equal the directory') }],
  });
});
