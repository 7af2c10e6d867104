import Ajv2020 from 'ajv/dist/2020';
import { factorySchemaDocuments } from '../../core/factory-tree/schema-documents';
import { validateFactoryTree, type TreeFile } from '../../core/factory-tree/validate-tree';

const allowAll = () => true;

const FACTORY = `schema_version: v1alpha1
name: bugfix-team
description: Reproduces a bug, fixes it and reviews the fix.
instructions: |
  Run the tests with npm test.
`;

const agent = (type: string, extra = '', prompt = 'Do your part.') => `---
agent_type: ${type}
${extra}---

${prompt}
`;

const tree = (overrides: Record<string, string | undefined> = {}): TreeFile[] =>
  Object.entries({
    'factory.yaml': FACTORY,
    'agents/lead/agent.md': agent('FOREMAN', 'description: Splits the work.\n'),
    'agents/fixer/agent.md': agent(
      'IMPLEMENT',
      'base_model: anthropic/claude-sonnet-4-5\nskills:\n  - acme/tools:lint\n',
    ),
    ...overrides,
  })
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([path, content]) => ({ path, content }));

const codes = (files: TreeFile[], allowed: (spec: string) => boolean = allowAll) =>
  validateFactoryTree(files, allowed).validation.diagnostics.map(({ code, path, line, column }) => ({
    code,
    path,
    line,
    column,
  }));

test('a valid tree is the factory it defines, with what was deliberately not proven', () => {
  const { validation: result, factory } = validateFactoryTree(tree(), allowAll);
  expect(result).toMatchObject({
    valid: true,
    schema_version: 'v1alpha1',
    diagnostics: [],
    validation_scope: { parser: 'checked', state_independent: 'checked', state_dependent: 'not_checked' },
  });
  expect(result.state_dependent_checks_not_run).toContain('skills_resolve');
  expect(result.deferred_resolutions).toEqual([
    { path: 'agents/fixer/agent.md', field: 'skills[0]', kind: 'skill' },
    { path: 'agents/fixer/agent.md', field: 'base_model', kind: 'model' },
  ]);
  expect(factory).toEqual({
    name: 'bugfix-team',
    description: 'Reproduces a bug, fixes it and reviews the fix.',
    instructions: 'Run the tests with npm test.',
    agents: [
      {
        name: 'fixer',
        agent_type: 'IMPLEMENT',
        description: null,
        prompt: 'Do your part.',
        base_model: 'anthropic/claude-sonnet-4-5',
        skills: ['acme/tools:lint'],
      },
      {
        name: 'lead',
        agent_type: 'FOREMAN',
        description: 'Splits the work.',
        prompt: 'Do your part.',
        base_model: null,
        skills: [],
      },
    ],
  });
});

test('the tree may sit in a directory; its agents are beside its factory.yaml', () => {
  const files = tree().map((file) => ({ ...file, path: `.agents/factories/bugfix-team/${file.path}` }));
  expect(validateFactoryTree(files, allowAll).validation.valid).toBe(true);
});

test("in a repository's .agents/factories/<dir>/, the factory's name is its directory's", () => {
  const files = tree().map((file) => ({ ...file, path: `.agents/factories/bugfixers/${file.path}` }));
  expect(codes(files)).toEqual([
    { code: 'FF_NAME_MISMATCH', path: '.agents/factories/bugfixers/factory.yaml', line: 2, column: 7 },
  ]);
});

test('a schema_version left out is the current one', () => {
  const result = validateFactoryTree(
    tree({ 'factory.yaml': FACTORY.replace('schema_version: v1alpha1\n', '') }),
    allowAll,
  ).validation;
  expect(result).toMatchObject({ valid: true, schema_version: 'v1alpha1' });
});

test('each schema violation is reported at its line and column, all at once', () => {
  const { validation: result } = validateFactoryTree(
    tree({
      'factory.yaml': `name: Bugfix Team
colour: blue
description: 42
`,
      'agents/lead/agent.md': `---
agent_type: foreman
skills:
  - acme/tools:lint
  - not a skill
model: gpt
---
Lead.
`,
    }),
    allowAll,
  );
  expect(result.valid).toBe(false);
  expect(result.validation_scope.state_independent).toBe('not_run');
  expect(result.diagnostics).toEqual([
    {
      code: 'FF_INVALID_VALUE',
      path: 'agents/lead/agent.md',
      line: 2,
      column: 13,
      message: expect.stringMatching(
        /^`agent_type` must be one of FOREMAN, .*got string "foreman" \(write it as FOREMAN\)$/,
      ),
    },
    {
      code: 'FF_INVALID_VALUE',
      path: 'agents/lead/agent.md',
      line: 5,
      column: 5,
      message: expect.stringContaining('`skills[1]` must be `owner/repo:skill-name`'),
    },
    {
      code: 'FF_UNKNOWN_FIELD',
      path: 'agents/lead/agent.md',
      line: 6,
      column: 1,
      message: expect.stringContaining('unknown field `model`'),
    },
    {
      code: 'FF_INVALID_VALUE',
      path: 'factory.yaml',
      line: 1,
      column: 7,
      message: expect.stringContaining('`name` must be lowercase letters, digits and single hyphens'),
    },
    {
      code: 'FF_UNKNOWN_FIELD',
      path: 'factory.yaml',
      line: 2,
      column: 1,
      message: expect.stringContaining('factory.yaml takes only schema_version, name, description, instructions'),
    },
    {
      code: 'FF_INVALID_TYPE',
      path: 'factory.yaml',
      line: 3,
      column: 14,
      message: '`description` must be a string; got number 42 (quote it)',
    },
  ]);
});

test('a missing field is reported at the mapping that lacks it', () => {
  expect(codes(tree({ 'factory.yaml': 'name: team\n', 'agents/lead/agent.md': '---\ndescription: x\n---\n' }))).toEqual(
    [
      { code: 'FF_MISSING_FIELD', path: 'agents/lead/agent.md', line: 2, column: 1 },
      { code: 'FF_MISSING_FIELD', path: 'factory.yaml', line: 1, column: 1 },
    ],
  );
});

test('YAML syntax errors, missing front matter, NUL bytes and oversized files are parser diagnostics', () => {
  expect(
    codes(
      tree({
        'factory.yaml': 'name: team\ndescription: [unclosed\n',
        'agents/lead/agent.md': 'agent_type: FOREMAN\n',
        'agents/fixer/agent.md': `---\nagent_type: IMPLEMENT\n---\n${'x'.repeat(300 * 1024)}`,
        'agents/nul/agent.md': '---\nagent_type: REVIEW\n---\n\u0000',
      }),
    ).map(({ code, path }) => `${path} ${code}`),
  ).toEqual([
    'agents/fixer/agent.md FF_FILE_TOO_LARGE',
    'agents/lead/agent.md FF_MISSING_FRONT_MATTER',
    'agents/nul/agent.md FF_INVALID_ENCODING',
    expect.stringMatching(/^factory\.yaml FF_YAML_SYNTAX$/),
  ]);
});

test('paths: malformed, repeated, unknown, a bad agent directory, no factory.yaml or two of them', () => {
  expect(
    codes([
      { path: '/etc/factory.yaml', content: FACTORY },
      { path: 'agents/../x/agent.md', content: agent('FOREMAN') },
      { path: 'agents/lead/agent.md', content: agent('FOREMAN') },
      { path: 'agents/lead/agent.md', content: agent('FOREMAN') },
    ]).map(({ code, path }) => `${path} ${code}`),
  ).toEqual([
    '/etc/factory.yaml FF_INVALID_PATH',
    'agents/../x/agent.md FF_INVALID_PATH',
    'agents/lead/agent.md FF_DUPLICATE_PATH',
    'factory.yaml FF_MISSING_FACTORY_FILE',
  ]);
  expect(
    codes(
      tree({
        'other/factory.yaml': FACTORY,
        'agents/Lead_1/agent.md': agent('REVIEW'),
        'automations/nightly.yaml': 'cron: daily\n',
        'agents/lead/SKILL.md': 'x',
      }),
    ).map(({ code, path }) => `${path} ${code}`),
  ).toEqual([
    'agents/Lead_1/agent.md FF_INVALID_AGENT_NAME',
    'agents/lead/SKILL.md FF_UNKNOWN_FILE',
    'automations/nightly.yaml FF_UNKNOWN_FILE',
    'other/factory.yaml FF_MULTIPLE_FACTORY_FILES',
  ]);
});

test('an unsupported schema_version is named, and echoed', () => {
  const result = validateFactoryTree(
    tree({ 'factory.yaml': `schema_version: v9\n${FACTORY.split('\n').slice(1).join('\n')}` }),
    allowAll,
  ).validation;
  expect(result.schema_version).toBe('v9');
  expect(result.diagnostics).toEqual([
    expect.objectContaining({
      code: 'FF_UNSUPPORTED_SCHEMA_VERSION',
      line: 1,
      column: 17,
      message: expect.stringContaining('v1alpha1'),
    }),
  ]);
});

test('rules across files: one foreman, at least one agent, prompt sizes, allowed skill owners', () => {
  expect(codes([{ path: 'factory.yaml', content: FACTORY }])).toEqual([
    { code: 'FF_NO_AGENTS', path: 'factory.yaml', line: 1, column: 1 },
  ]);
  expect(codes(tree({ 'agents/lead/agent.md': agent('REVIEW') }))).toEqual([
    { code: 'FF_NO_FOREMAN', path: 'factory.yaml', line: 1, column: 1 },
  ]);
  expect(codes(tree({ 'agents/fixer/agent.md': agent('FOREMAN'), 'agents/zed/agent.md': agent('FOREMAN') }))).toEqual([
    { code: 'FF_MULTIPLE_FOREMEN', path: 'agents/fixer/agent.md', line: 2, column: 13 },
    { code: 'FF_MULTIPLE_FOREMEN', path: 'agents/lead/agent.md', line: 2, column: 13 },
    { code: 'FF_MULTIPLE_FOREMEN', path: 'agents/zed/agent.md', line: 2, column: 13 },
  ]);
  expect(codes(tree({ 'agents/lead/agent.md': agent('FOREMAN', '', 'p'.repeat(100_001)) }))).toEqual([
    { code: 'FF_PROMPT_TOO_LONG', path: 'agents/lead/agent.md', line: 5, column: 1 },
  ]);
  expect(codes(tree(), (spec) => !spec.startsWith('acme/'))).toEqual([
    { code: 'FF_SKILL_NOT_ALLOWED', path: 'agents/fixer/agent.md', line: 5, column: 5 },
  ]);
  const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`agents/a${i}/agent.md`, agent('REVIEW')]));
  expect(codes(tree(many)).map(({ code }) => code)).toEqual(['FF_TOO_MANY_AGENTS']);
});

test('the served documents are valid JSON Schema 2020-12 and resolve their relative references on their own', () => {
  const ajv = new Ajv2020({ strict: true });
  const documents = factorySchemaDocuments('v1alpha1');
  for (const [name, doc] of Object.entries(documents)) {
    expect((doc as { $id: string }).$id).toBe(name);
    expect(ajv.validateSchema(doc)).toBe(true);
    ajv.addSchema(doc);
  }
  const validate = ajv.getSchema('factory.schema.json')!;
  expect(validate({ name: 'ok', description: 'x' })).toBe(true);
  expect(validate({ name: 'Not OK', description: 'x' })).toBe(false);
});

test('input nobody authenticated buys a bounded answer: at most 50 diagnostics a file, the rest counted', () => {
  const keys = Array.from({ length: 5000 }, (_, i) => `k${i}: 1`).join('\n');
  const { validation } = validateFactoryTree(
    tree({
      'factory.yaml': `name: team\ndescription: x\n${keys}\n`,
      'agents/lead/agent.md': `---\nagent_type: FOREMAN\n${keys}\n---\n`,
    }),
    allowAll,
  );
  const byFile = (path: string) => validation.diagnostics.filter((d) => d.path === path);
  expect(byFile('factory.yaml')).toHaveLength(51);
  expect(byFile('factory.yaml').at(-1)).toEqual({
    code: 'FF_MORE_DIAGNOSTICS',
    path: 'factory.yaml',
    line: 1,
    column: 1,
    message: '4950 more problems of this file are not listed; fix these and validate again',
  });
  expect(byFile('agents/lead/agent.md').filter((d) => d.code === 'FF_UNKNOWN_FIELD')).toHaveLength(50);
  const many = Object.fromEntries(
    Array.from({ length: 10 }, (_, i) => [`agents/a${i}/agent.md`, `---\n${keys}\n---\n`]),
  );
  expect(validateFactoryTree(tree(many), allowAll).validation.diagnostics.length).toBeLessThanOrEqual(200 + 13);
});

test('an alias bomb is beyond the YAML limits, and keys like __proto__ are unknown fields, never properties', () => {
  const bomb = [
    'a: &a [x, x, x, x, x, x, x, x, x, x]',
    ...Array.from({ length: 8 }, (_, i) => {
      const prev = i === 0 ? 'a' : `l${i - 1}`;
      return `l${i}: &l${i} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`;
    }),
  ].join('\n');
  expect(codes(tree({ 'factory.yaml': `${bomb}\nname: team\ndescription: x\n` })).map((d) => d.code)).toEqual([
    'FF_YAML_LIMIT',
  ]);
  const polluting = validateFactoryTree(
    tree({ 'factory.yaml': 'name: team\ndescription: x\n__proto__: {polluted: true}\nconstructor: 1\n' }),
    allowAll,
  ).validation;
  expect(polluting.diagnostics.map((d) => [d.code, d.line])).toEqual([
    ['FF_UNKNOWN_FIELD', 3],
    ['FF_UNKNOWN_FIELD', 4],
  ]);
  expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
});

test('a key twice in one mapping is a YAML error where it repeats', () => {
  const { validation } = validateFactoryTree(
    tree({
      'factory.yaml': 'name: team\ndescription: x\nname: again\n',
      'agents/lead/agent.md': '---\nagent_type: FOREMAN\nskills: []\nskills: []\n---\n',
    }),
    allowAll,
  );
  expect(validation.diagnostics).toEqual([
    expect.objectContaining({
      code: 'FF_YAML_SYNTAX',
      path: 'agents/lead/agent.md',
      line: 4,
      column: 1,
      message: expect.stringContaining('duplicate key "skills"'),
    }),
    expect.objectContaining({
      code: 'FF_YAML_SYNTAX',
      path: 'factory.yaml',
      line: 3,
      column: 1,
      message: expect.stringContaining('duplicate key "name"'),
    }),
  ]);
});
