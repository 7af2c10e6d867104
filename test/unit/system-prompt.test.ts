import { systemPrompt } from '../../activities/agent-step/system-prompt';
import { DEFAULT_BASE_PROMPT } from '../../services/runs/new-run';

const WORKSPACE =
  'Your workspace is the current directory of your tools; repositories of the environment are cloned into it. Paths are relative to the workspace root.';

test("the run's base prompt, or the default when it has none or a blank one, then the workspace", () => {
  expect(systemPrompt('  You review code.\n', [])).toBe(`You review code.\n\n${WORKSPACE}`);
  for (const none of [undefined, '', ' \n\t']) {
    expect(systemPrompt(none, [])).toBe(`${DEFAULT_BASE_PROMPT}\n\n${WORKSPACE}`);
  }
});

test('advertised skills are listed with their descriptions, for read_skill', () => {
  const prompt = systemPrompt('Base.', [
    { name: 'lint', description: 'Runs the linters.' },
    { name: 'release', description: 'Cuts a release.', bundled_skill_id: 'release' },
  ]);
  expect(prompt).toBe(
    `Base.\n\n${WORKSPACE}\n\nSkills you can load with the read_skill tool when a task matches one:\n` +
      '- lint: Runs the linters.\n- release: Cuts a release.',
  );
});

test("a factory's agents are introduced before the skills, for dispatch_agent and wait_for_runs", () => {
  const prompt = systemPrompt(
    'Base.',
    [{ name: 'lint', description: 'Runs the linters.' }],
    [
      { uid: 'a1', name: 'Reviewer', agentType: 'reviewer', description: 'Reviews diffs.' },
      { uid: 'a2', name: 'Tester', agentType: 'tester', description: null },
    ],
  );
  expect(prompt.split('\n\n')).toEqual([
    'Base.',
    WORKSPACE,
    'Agents of your factory you can give work to with dispatch_agent (then collect their results with wait_for_runs):\n' +
      '- Reviewer (reviewer, uid a1): Reviews diffs.\n- Tester (tester, uid a2)',
    'Skills you can load with the read_skill tool when a task matches one:\n- lint: Runs the linters.',
  ]);
});

test('no colleagues and no skills: neither section appears', () => {
  const prompt = systemPrompt('Base.', [], []);
  expect(prompt).not.toContain('dispatch_agent');
  expect(prompt).not.toContain('read_skill');
});
