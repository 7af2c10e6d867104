import {
  inMode,
  messageMode,
  PLAN_APPROVED_NOTE,
  planFromAnswer,
  planModeRefusal,
} from '../../activities/agent-step/plan-mode';
import { BUILTIN_TOOL_NAMES } from '../../activities/tools/builtin-tools';
import { MAX_PLAN_CHARS, submitPlan } from '../../activities/tools/submit-plan-tool';
import type { ToolContext } from '../../activities/tools/tool-types';
import { planAwaitsMessage } from '../../services/runs/run-transitions';

test('plan mode lets through only the tools that read, ask_user and submit_plan; normal mode refuses nothing', () => {
  const allowed = [...BUILTIN_TOOL_NAMES].filter((t) => planModeRefusal('plan', t) === undefined).sort();
  expect(allowed).toEqual(['ask_user', 'list_directory', 'read_file', 'read_skill', 'submit_plan']);
  for (const tool of ['write_file', 'edit_file', 'run_command', 'upload_artifact', 'dispatch_agent', 'mcp_deploy']) {
    expect(planModeRefusal('plan', tool)).toMatch(new RegExp(`^Refused in plan mode: ${tool} may change things`));
    expect(planModeRefusal('normal', tool)).toBeUndefined();
  }
});

test('a message is in plan mode only when it says "plan"; the first normal one after a plan carries the note', () => {
  expect([messageMode('plan'), messageMode('normal'), messageMode(undefined), messageMode('orchestrate')]).toEqual([
    'plan',
    'normal',
    'normal',
    'normal',
  ]);
  expect(inMode('normal', 'go', true)).toBe(`${PLAN_APPROVED_NOTE}\n\ngo`);
  expect(inMode('normal', 'go')).toBe('go');
});

test('a final answer taken as the plan: its first line is the title; an empty answer is no plan', () => {
  expect(planFromAnswer('## Migrate the DB\n\n1. Dump.\n')).toEqual({
    title: 'Migrate the DB',
    markdown: '## Migrate the DB\n\n1. Dump.',
  });
  expect(planFromAnswer('   \n')).toBeUndefined();
  expect(planFromAnswer('#\nSteps')?.title).toBe('Plan');
  const long = planFromAnswer(`${'t'.repeat(300)}\n${'x'.repeat(MAX_PLAN_CHARS)}`)!;
  expect(long.title).toHaveLength(200);
  expect(long.markdown).toHaveLength(MAX_PLAN_CHARS);
});

test('submit_plan checks its arguments and works only where a plan can be recorded (plan mode)', async () => {
  const recorded: unknown[] = [];
  const ctx = {
    recordPlan: (plan: unknown) => {
      recorded.push(plan);
      return Promise.resolve({ artifactUid: 'a-1', version: 3 });
    },
  } as unknown as ToolContext;
  await expect(submitPlan({ title: ' ', markdown: 'x' }, ctx)).rejects.toThrow('`title` must be a non-empty string');
  await expect(submitPlan({ title: 't', markdown: '' }, ctx)).rejects.toThrow('`markdown` must be the plan');
  await expect(submitPlan({ title: 't', markdown: 'x'.repeat(MAX_PLAN_CHARS + 1) }, ctx)).rejects.toThrow(
    `at most ${MAX_PLAN_CHARS}`,
  );
  await expect(submitPlan({ title: 't', markdown: 'x' }, {} as ToolContext)).rejects.toThrow(
    'only available in plan mode',
  );
  expect(recorded).toEqual([]);
  const outcome = await submitPlan({ title: ' Ship it ', markdown: '1. Ship.' }, ctx);
  expect(recorded).toEqual([{ title: 'Ship it', markdown: '1. Ship.' }]);
  expect(outcome).toMatchObject({ isError: false, details: { artifact_uid: 'a-1' } });
  expect(outcome.output).toContain('version 3');
});

test('the status of a turn that ended with a plan names it, its version and where to read it', () => {
  expect(planAwaitsMessage({ title: 'T', version: 2, artifactUid: 'u' })).toBe(
    'Plan "T" (version 2) awaits approval: send a follow-up to carry it out, or one in plan mode to revise it. The plan: GET /api/v1/agent/artifacts/u.',
  );
});
