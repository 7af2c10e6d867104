import path from 'node:path';
import { SkillFormatError } from '../../services/skills/skill-files';
import { createIsolatedChild, type IsolatedChild } from '../../infra/isolated-child';
import {
  checkUntrustedFactoryFile,
  parseChild,
  parseUntrustedSkillFile,
  PARSE_CHILD_ENTRY,
  validateUntrustedTree,
} from '../../services/untrusted-parse/untrusted-parser';
import { ALIAS_BOMB, DEEP_FLOW, DEEP_FRONT_MATTER } from '../helpers/hostile-yaml';

/**
 * Factory trees, FACTORY.md and SKILL.md files are parsed in this process's parse child
 * (services/untrusted-parse): the same answers as in-process, diagnostics with their places
 * included, and a clear answer when the child could not finish.
 */

const TREE = [
  { path: '.agents/factories/team/factory.yaml', content: 'name: team\ndescription: A team\n' },
  {
    path: '.agents/factories/team/agents/lead/agent.md',
    content: '---\nagent_type: FOREMAN\nskills: [acme/tools:lint, other/tools:fmt]\n---\nLead.\n',
  },
];
const FACTORY_MD = `---\nname: team\ndescription: A team\nagents:\n  - name: lead\n    agent_type: FOREMAN\n---\nBe kind.\n`;

/** Every skill owner allowed; one model served. */
const CHECKS = { gitAllowedOwners: undefined, servedModels: ['openai/served-model'] };

const children: IsolatedChild[] = [];
afterAll(() => [...children, parseChild()].forEach((child) => child.close()));

function childOf(entry: string, deadlineMs = 60_000): IsolatedChild {
  const child = createIsolatedChild({ entry, deadlineMs, maxOldSpaceMb: 128, stackSizeKb: 512 });
  children.push(child);
  return child;
}

test('a tree is validated in the child: positions worked out there, GIT_ALLOWED_OWNERS applied there', async () => {
  const { validation, factory } = await validateUntrustedTree(TREE, ['acme']);
  expect(factory).toBeUndefined();
  expect(validation.diagnostics).toEqual([
    expect.objectContaining({
      code: 'FF_SKILL_NOT_ALLOWED',
      path: TREE[1]!.path,
      line: 3,
      column: 27,
      message: expect.stringContaining('does not include other'),
    }),
  ]);
  const allowed = await validateUntrustedTree(TREE, undefined);
  expect(allowed.factory).toMatchObject({ name: 'team', agents: [{ name: 'lead', agent_type: 'FOREMAN' }] });
  expect(parseChild().pid).toEqual(expect.any(Number));
});

test("the red team's inputs: answered with FF_YAML_LIMIT, by a child that does not die of them", async () => {
  await validateUntrustedTree(TREE, undefined);
  const pid = parseChild().pid;
  for (let round = 0; round < 6; round++) {
    const { validation } = await validateUntrustedTree(
      [
        { path: 'factory.yaml', content: round % 2 ? DEEP_FLOW : ALIAS_BOMB },
        { path: 'agents/a/agent.md', content: DEEP_FRONT_MATTER },
      ],
      undefined,
    );
    expect(validation.diagnostics.map((d) => d.code)).toEqual(['FF_YAML_LIMIT', 'FF_YAML_LIMIT']);
  }
  expect(parseChild().pid).toBe(pid);
  expect(await checkUntrustedFactoryFile(DEEP_FRONT_MATTER, undefined, CHECKS)).toEqual({
    valid: false,
    errors: [
      { path: 'front_matter', message: expect.stringMatching(/^YAML error at line 2, column 67: .*deeper than 64/) },
    ],
  });
  await expect(parseUntrustedSkillFile(DEEP_FRONT_MATTER, 'acme/tools:deep')).rejects.toThrow(
    new SkillFormatError(
      'acme/tools:deep has invalid front matter: line 2, column 67: nests collections deeper than 64 levels (each `[`, `{`, `- ` item and indented mapping is one); flatten it',
    ),
  );
  expect(await checkUntrustedFactoryFile(FACTORY_MD, '.agents/factories/team/FACTORY.md', CHECKS)).toMatchObject({
    valid: true,
    factory: { name: 'team', instructions: 'Be kind.' },
  });
});

test('a parse that ran past its deadline: FF_PARSE_LIMIT in the answer, naming the limit', async () => {
  // A millisecond: the child is still parsing a 200 KB file when the deadline comes.
  const slow = childOf(PARSE_CHILD_ENTRY, 1);
  const big = `name: team\ndescription: A team\ninstructions: |\n${'  line\n'.repeat(30_000)}`;
  const { validation } = await validateUntrustedTree([{ path: 'factory.yaml', content: big }], undefined, slow);
  expect(validation).toEqual({
    valid: false,
    schema_version: 'v1alpha1',
    diagnostics: [
      {
        code: 'FF_PARSE_LIMIT',
        path: 'factory.yaml',
        line: 1,
        column: 1,
        message:
          "the tree could not be parsed within this service's limits: parsing took longer than 0.001 s; make its files smaller and simpler",
      },
    ],
    deferred_resolutions: [],
    state_dependent_checks_not_run: expect.any(Array),
    validation_scope: { parser: 'not_run', state_independent: 'not_run', state_dependent: 'not_checked' },
  });
});

test('a parse child that died: a clear answer from each caller, never an exception of its own', async () => {
  const dying = childOf(path.join(__dirname, '..', 'fixtures', 'dying-parse-child.ts'));
  const stopped =
    /could not be parsed within this service's limits: its parser stopped \(it may have run out of its 128 MB of memory or its stack\)/;
  const { validation } = await validateUntrustedTree(TREE, undefined, dying);
  expect(validation.diagnostics).toEqual([
    expect.objectContaining({ code: 'FF_PARSE_LIMIT', path: TREE[0]!.path, message: expect.stringMatching(stopped) }),
  ]);
  expect(await checkUntrustedFactoryFile(FACTORY_MD, undefined, CHECKS, dying)).toEqual({
    valid: false,
    errors: [{ path: 'file', message: expect.stringMatching(stopped) }],
  });
  await expect(parseUntrustedSkillFile(FACTORY_MD, 'acme/tools:x', dying)).rejects.toThrow(SkillFormatError);
});

test("a FACTORY.md agent's model is checked in the child against the models served, given as data", async () => {
  const withModel = (model: string) =>
    FACTORY_MD.replace('agent_type: FOREMAN', `agent_type: FOREMAN\n    base_model: ${model}`);
  expect(await checkUntrustedFactoryFile(withModel('openai/served-model'), undefined, CHECKS)).toMatchObject({
    valid: true,
  });
  expect(await checkUntrustedFactoryFile(withModel('openai/gpt-9-ultra'), undefined, CHECKS)).toMatchObject({
    valid: false,
    errors: [
      expect.objectContaining({ message: expect.stringContaining('does not serve the model "openai/gpt-9-ultra"') }),
    ],
  });
});
