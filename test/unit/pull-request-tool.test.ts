import { gateOf } from '../../core/approval-policy';
import { MAX_PULL_REQUEST_TITLE_CHARS, parsePullRequestToolArguments } from '../../core/pull-request-tool';
import { planModeRefusal } from '../../activities/agent-step/plan-mode';
import type { RepositoryDelivery } from '../../activities/delivery/deliver-run';
import { DeliveryFailure } from '../../activities/delivery/delivery-failures';
import { BUILTIN_TOOL_NAMES, runBuiltinTool, type ToolContext } from '../../activities/tools/builtin-tools';
import type { PullRequestToolArguments } from '../../core/pull-request-tool';

test('open_pull_request arguments: a one-line title, a trimmed summary, a boolean draft; all optional', () => {
  expect(parsePullRequestToolArguments({})).toEqual({});
  expect(
    parsePullRequestToolArguments({ title: ' Fix\n the  login ', body_summary: '  Did it.\n', draft: true }),
  ).toEqual({ title: 'Fix the login', bodySummary: 'Did it.', draft: true });
  expect(parsePullRequestToolArguments({ title: null, body_summary: '   ', draft: null })).toEqual({});
  expect(parsePullRequestToolArguments({ title: 'a\u0000b' })).toEqual({ title: 'ab' });
});

test.each([
  [{ title: 7 }, '`title` must be a string'],
  [{ title: ' \n ' }, '`title` must have some text'],
  [{ title: 'x'.repeat(MAX_PULL_REQUEST_TITLE_CHARS + 1) }, `at most ${MAX_PULL_REQUEST_TITLE_CHARS} characters`],
  [{ body_summary: ['x'] }, '`body_summary` must be a string'],
  [{ draft: 'yes' }, '`draft` must be true or false'],
  [{ base: 'main' }, 'unknown argument `base`'],
])('open_pull_request refuses %j', (args, message) => {
  expect(() => parsePullRequestToolArguments(args)).toThrow(message);
});

/** A tool context that delivers with `deliver`, or offers no delivery at all. */
function contextWith(deliver?: (request: PullRequestToolArguments) => RepositoryDelivery[]): ToolContext {
  return {
    signal: new AbortController().signal,
    ...(deliver ? { openPullRequest: (request: PullRequestToolArguments) => Promise.resolve(deliver(request)) } : {}),
  } as unknown as ToolContext;
}

test('bad arguments, or a run that delivers no pull request, are an error result for the model, and nothing is delivered', async () => {
  const asked: PullRequestToolArguments[] = [];
  const ctx = contextWith((request) => {
    asked.push(request);
    return [];
  });
  const bad = await runBuiltinTool('open_pull_request', { draft: 'maybe' }, ctx);
  expect(bad).toEqual({ output: 'open_pull_request failed: `draft` must be true or false', isError: true });
  const unavailable = await runBuiltinTool('open_pull_request', { title: 'T' }, contextWith());
  expect(unavailable.isError).toBe(true);
  expect(unavailable.output).toMatch(/not available: this run does not deliver pull requests/);
  expect(asked).toEqual([]);
});

test("the result names each repository's pull request, or its typed failure, and is no error when it delivered", async () => {
  const asked: PullRequestToolArguments[] = [];
  const ctx = contextWith((request) => {
    asked.push(request);
    return [
      {
        repository: 'acme/api',
        pullRequest: {
          number: 4,
          url: 'https://git.example.com/acme/api/pulls/4',
          branch: 'agent-runs/r',
          status: 'open',
          head: 'a'.repeat(40),
        },
      },
      { repository: 'acme/web', unchanged: true },
      { repository: 'acme/ops', failure: new DeliveryFailure('pull_request_conflict', 'The branch holds commits.') },
    ];
  });
  const outcome = await runBuiltinTool('open_pull_request', { title: 'Fix it', draft: false }, ctx);
  expect(asked).toEqual([{ title: 'Fix it', draft: false }]);
  expect(outcome.isError).toBe(false);
  expect(outcome.output.split('\n')).toEqual([
    'acme/api: pull request #4 (open) https://git.example.com/acme/api/pulls/4 from branch agent-runs/r',
    'acme/web: nothing changed, nothing delivered',
    'acme/ops: failed (pull_request_conflict): The branch holds commits.',
  ]);
});

test('open_pull_request is a built-in tool that plan mode refuses and config.approval gates by name', () => {
  expect(BUILTIN_TOOL_NAMES.has('open_pull_request')).toBe(true);
  expect(planModeRefusal('plan', 'open_pull_request')).toMatch(/^Refused in plan mode/);
  const call = { name: 'open_pull_request', arguments: { title: 'T' } };
  expect(gateOf({ tools: ['open_pull_request'] }, call)).toBe('open_pull_request');
  expect(gateOf({ tools: ['open_*'] }, call)).toBe('open_*');
  expect(gateOf({ tools: ['run_command'] }, call)).toBeUndefined();
});
