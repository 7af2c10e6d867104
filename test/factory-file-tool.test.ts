import { createEnvironment } from './helpers/environments';
import { createGitHost } from './helpers/git-fixtures';
import type { ScriptedToolCall } from './helpers/scripted-model';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * `validate_factory_file`: an agent inside a run (which cannot reach the service's API) checks a
 * FACTORY.md of its workspace with the validation endpoint's own check, run by the worker.
 */

const TOOL = 'validate_factory_file';

const VALID = `---
name: review-team
description: Reviews pull requests.
agents:
  - name: lead
    agent_type: FOREMAN
    prompt: Dispatch the checker on each pull request, then summarise.
  - name: checker
    agent_type: REVIEW
    skills:
      - agent-runs/bundled:pr-comments
---

Keep reviews short.
`;

/** Several problems at once: a name that is not the directory's, an unknown field, a bad type and skill. */
const INVALID = `---
name: other-team
description: Broken on purpose.
agents:
  - name: lead
    agent_type: FOREMAN
    model: gpt-4o
  - name: checker
    agent_type: reviewer
    skills: [not a spec]
---
`;

/** Well-formed, but one skill is of an owner GIT_ALLOWED_OWNERS does not allow. */
const DISALLOWED = `---
name: outside-team
description: Uses a skill from elsewhere.
agents:
  - name: lead
    agent_type: FOREMAN
    skills: [evil/tools:lint]
---
`;

const git = createGitHost();
git.addRepo('acme', 'web', { '.agents/factories/review-team/FACTORY.md': VALID, 'README.md': '# web\n' });

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { GIT_BASE_URL: git.baseUrl, GIT_ALLOWED_OWNERS: 'acme' } });
});
afterAll(async () => {
  await ctx?.close();
});

type ToolEntry = { name: string; input: Record<string, unknown>; output: string; isError: boolean };

async function toolCalls(runId: string): Promise<ToolEntry[]> {
  return (await transcript(ctx, runId))
    .filter((e) => e.kind === 'tool_call')
    .map((e) => ({
      name: String(e.payload.name),
      input: e.payload.input as Record<string, unknown>,
      output: String(e.payload.output),
      isError: e.payload.is_error === true,
    }));
}

/** A script that makes the calls of each step in turn, then answers `done`. */
function scriptSteps(marker: string, steps: ScriptedToolCall[][]): void {
  ctx.model.script(marker, (_req, call) =>
    call <= steps.length ? { text: '', toolCalls: steps[call - 1]! } : { text: 'done' },
  );
}

test('offered once factory-files is loaded: a valid file is summarised, an invalid one gets every problem with its path, as the endpoint says', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'web', github_repos: [{ owner: 'acme', repo: 'web' }] });
  const marker = uniqueName('validate');
  const validate = (path: string) => ({ name: TOOL, arguments: { path } });
  scriptSteps(marker, [
    [
      { name: 'write_file', arguments: { path: 'web/.agents/factories/bad-team/FACTORY.md', content: INVALID } },
      { name: 'write_file', arguments: { path: 'web/.agents/factories/outside-team/FACTORY.md', content: DISALLOWED } },
      // Not offered yet: the tool is not there to call.
      validate('web/.agents/factories/review-team/FACTORY.md'),
    ],
    [{ name: 'read_skill', arguments: { name: 'factory-files' } }],
    [
      validate('web/.agents/factories/review-team/FACTORY.md'),
      validate('web/.agents/factories/bad-team/FACTORY.md'),
      validate('./web/.agents/factories/outside-team/FACTORY.md'),
    ],
  ]);
  const runId = await createRun(ctx, key, { prompt: `Define a factory ${marker}`, config: { environment_id: envId } });
  // Invalid files are findings for the agent, not a failure of the run.
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);

  const requests = ctx.model.calls(marker);
  expect(requests).toHaveLength(4);
  // Not in a request before the skill is loaded; in every one after.
  expect(requests[0]!.tools).toContain('read_file');
  expect(requests[0]!.tools).not.toContain(TOOL);
  expect(requests[1]!.tools).not.toContain(TOOL);
  expect(requests[2]!.tools).toContain(TOOL);
  expect(requests[3]!.tools).toContain(TOOL);
  expect(requests[0]!.system).toMatch(/^- factory-files: /m);

  const calls = (await toolCalls(runId)).filter((c) => c.name === TOOL);
  expect(calls).toHaveLength(4);
  const [early, valid, invalid, disallowed] = calls as [ToolEntry, ToolEntry, ToolEntry, ToolEntry];
  expect(early).toMatchObject({ isError: true, output: `Unknown tool ${TOOL}.` });

  expect(valid.isError).toBe(false);
  expect(valid.output).toContain(
    'Valid: factory "review-team" in `.agents/factories/review-team/FACTORY.md` of repository `web`.',
  );
  expect(valid.output).toContain('Description: Reviews pull requests.');
  expect(valid.output).toMatch(
    /^- lead \(FOREMAN\): model: the service default; skills: none; prompt: \d+ characters$/m,
  );
  expect(valid.output).toMatch(/^- checker \(REVIEW\): .*skills: agent-runs\/bundled:pr-comments/m);
  expect(valid.output).toContain('Instructions (the markdown body, told to every agent): 19 characters.');
  expect(valid.output).toContain('review-team/lead, review-team/checker');

  // Every problem, with where it is: exactly those the validation endpoint reports for the file.
  const endpoint = await ctx.api
    .post('/api/v1/agent/factories/validate')
    .set(auth(key))
    .send({ content: INVALID, path: '.agents/factories/bad-team/FACTORY.md' });
  expect(endpoint.status).toBe(200);
  const errors = (endpoint.body as { valid: false; errors: { path: string; message: string }[] }).errors;
  expect(errors.map((e) => e.path)).toEqual(
    expect.arrayContaining(['name', 'agents[0].model', 'agents[1].agent_type', 'agents[1].skills[0]']),
  );
  expect(invalid.isError).toBe(false);
  expect(invalid.output.split('\n')).toEqual([
    `Invalid: ${errors.length} problems in \`.agents/factories/bad-team/FACTORY.md\` of repository \`web\`; discovery would skip this file. Fix each, then validate again:`,
    ...errors.map((e) => `- ${e.path}: ${e.message}`),
  ]);
  expect(invalid.output).toContain('the name must equal the directory');

  // The operator's GIT_ALLOWED_OWNERS applies, as in discovery and the endpoint.
  expect(disallowed.output).toMatch(/^Invalid: 1 problem in `\.agents\/factories\/outside-team\/FACTORY\.md`/);
  expect(disallowed.output).toContain("- agents[0].skills[0]: this service's GIT_ALLOWED_OWNERS does not include evil");
});

test('a run whose skill is factory-files has the tool from the start; paths and symlinks out of the workspace are refused as read_file refuses them, and garbage is a finding, not a crash', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('validate-escape');
  const escapes = ['../../etc/passwd', '/etc/passwd', 'etcpw', '.agents/factories/pw/FACTORY.md'];
  scriptSteps(marker, [
    [
      {
        name: 'run_command',
        arguments: {
          command: [
            'mkdir -p .agents/factories/pw .agents/factories/big .agents/factories/junk .agents/factories/noise .agents/factories/review-team',
            'ln -s /etc/passwd etcpw',
            'ln -s /etc/passwd .agents/factories/pw/FACTORY.md',
            'yes aaaaaaa | head -c 300000 > .agents/factories/big/FACTORY.md',
            "printf '\\x00\\xff\\xfe---\\nname: x\\n' > .agents/factories/junk/FACTORY.md",
            "printf '\\xff\\xfe\\x80 {{{ not: [yaml' > .agents/factories/noise/FACTORY.md",
            'ln -s ../../../etcpw .agents/factories/review-team/FACTORY.md',
          ].join(' && '),
        },
      },
    ],
    [
      ...escapes.map((path) => ({ name: TOOL, arguments: { path } })),
      ...escapes.map((path) => ({ name: 'read_file', arguments: { path } })),
    ],
    [
      { name: TOOL, arguments: { path: '.agents/factories/big/FACTORY.md' } },
      { name: TOOL, arguments: { path: '.agents/factories/junk/FACTORY.md' } },
      { name: TOOL, arguments: { path: '.agents/factories/noise/FACTORY.md' } },
      { name: TOOL, arguments: { path: '.agents/factories/review-team/FACTORY.md' } },
      { name: TOOL, arguments: {} },
    ],
  ]);
  const runId = await createRun(ctx, key, {
    prompt: `Check the factories ${marker}`,
    skill: 'agent-runs/bundled:factory-files',
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  expect(ctx.model.calls(marker)[0]!.tools).toContain(TOOL);

  const calls = await toolCalls(runId);
  expect(calls[0]).toMatchObject({ name: 'run_command', isError: false });
  const validated = calls.filter((c) => c.name === TOOL);
  const read = calls.filter((c) => c.name === 'read_file');
  expect(validated).toHaveLength(escapes.length + 5);
  for (const [index, path] of escapes.entries()) {
    const mine = validated[index]!;
    const theirs = read[index]!;
    expect(mine.input).toEqual({ path });
    expect(mine.isError).toBe(true);
    expect(mine.output).not.toContain('root:');
    expect(mine.output).toMatch(/outside the workspace|dangling symlink/);
    expect(theirs.isError).toBe(true);
    expect(mine.output.replace(`${TOOL} failed: `, '')).toBe(theirs.output.replace('read_file failed: ', ''));
  }
  const [big, junk, noise, linked, noPath] = validated.slice(escapes.length) as ToolEntry[];
  expect(big!.isError).toBe(true);
  expect(big!.output).toContain('is 300000 bytes, above the limit of 262144 bytes');
  expect(big!.output).not.toContain('aaaa');
  expect(junk).toMatchObject({ isError: false });
  expect(junk!.output).toMatch(/^Invalid: 1 problem in `\.agents\/factories\/junk\/FACTORY\.md`/);
  expect(junk!.output).toContain('- file: contains NUL characters');
  expect(noise!.output).toMatch(/^Invalid: 1 problem/);
  expect(noise!.output).toContain('- front_matter: the file must start with YAML front matter');
  // A symlink inside the workspace that leads out is refused too, never read.
  expect(linked!.isError).toBe(true);
  expect(linked!.output).toMatch(/outside the workspace|dangling symlink/);
  expect(noPath).toMatchObject({ isError: true, output: `${TOOL} failed: \`path\` must be a string` });
});

test('a factory tree (factory.yaml and agents/<name>/agent.md) is validated as a tree, each problem at its line', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'web', github_repos: [{ owner: 'acme', repo: 'web' }] });
  const marker = uniqueName('validate-tree');
  const tree = 'web/.agents/factories/tree-team';
  const write = (path: string, content: string) => ({ name: 'write_file', arguments: { path, content } });
  scriptSteps(marker, [
    [{ name: 'read_skill', arguments: { name: 'factory-files' } }],
    [
      write(`${tree}/factory.yaml`, 'name: tree-team\ndescription: A tree.\n'),
      write(`${tree}/agents/lead/agent.md`, '---\nagent_type: FOREMAN\n---\nLead.\n'),
      write(`${tree}/agents/fixer/agent.md`, '---\nagent_type: IMPLEMENT\nskills: [acme/tools:lint]\n---\nFix.\n'),
      write('web/.agents/factories/wrong/factory.yaml', 'name: other\ndescription: Misplaced.\n'),
      write('web/.agents/factories/wrong/agents/lead/agent.md', '---\nagent_type: FOREMAN\ncolour: red\n---\n'),
    ],
    [
      { name: TOOL, arguments: { path: `${tree}/factory.yaml` } },
      { name: TOOL, arguments: { path: 'web/.agents/factories/wrong/factory.yaml' } },
    ],
  ]);
  const runId = await createRun(ctx, key, { prompt: `Define a tree ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  const [valid, invalid] = (await toolCalls(runId)).filter((c) => c.name === TOOL) as [ToolEntry, ToolEntry];
  expect(valid.isError).toBe(false);
  expect(valid.output).toContain(
    'Valid: factory "tree-team" in `.agents/factories/tree-team/factory.yaml` of repository `web`.',
  );
  expect(valid.output).toMatch(/^- fixer \(IMPLEMENT\): .*skills: acme\/tools:lint; prompt: 4 characters$/m);
  expect(valid.output).toContain('tree-team/fixer, tree-team/lead');
  expect(invalid.output.split('\n')).toEqual([
    'Invalid: 1 problem in the tree of `.agents/factories/wrong/factory.yaml` of repository `web`; discovery would skip it. Fix each, then validate again:',
    expect.stringMatching(
      /^- \.agents\/factories\/wrong\/agents\/lead\/agent\.md:3:1: unknown field `colour`.* \(FF_UNKNOWN_FIELD\)$/,
    ),
  ]);
});
