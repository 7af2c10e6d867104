import { DEFAULT_WEBHOOK_EVENT_TYPES, webhookPullRequestChange, WEBHOOK_EVENT_TYPES } from '../../core/webhooks';

const recorded = {
  repository: 'https://git.example.com/acme/widgets',
  url: 'https://git.example.com/acme/widgets/pulls/7',
  number: 7,
  branch: 'agent-runs/r1',
  source: 'forge_webhook' as const,
};

test('run.pull_request_changed is a type to ask for: a webhook made without event_types does not get it', () => {
  expect(WEBHOOK_EVENT_TYPES).toContain('run.pull_request_changed');
  expect(DEFAULT_WEBHOOK_EVENT_TYPES).toEqual(['run.state_changed']);
});

test("a pull request change is sent as {repository, url, branch, status, previous_status}; an opening's previous status is null", () => {
  expect(webhookPullRequestChange({ ...recorded, status: 'merged', previous_status: 'open' })).toEqual({
    repository: recorded.repository,
    url: recorded.url,
    branch: 'agent-runs/r1',
    status: 'merged',
    previous_status: 'open',
  });
  expect(webhookPullRequestChange({ ...recorded, status: 'draft', opened: true })).toEqual({
    repository: recorded.repository,
    url: recorded.url,
    branch: 'agent-runs/r1',
    status: 'draft',
    previous_status: null,
  });
});
