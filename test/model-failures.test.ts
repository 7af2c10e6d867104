import { auth, createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

type Status = { message: string; error_code: string; retryable: boolean };

test('a model with no configured provider ends the run FAILED with feature_not_available naming the variable', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await createRun(ctx, key, { prompt: 'hello', config: { model_id: 'anthropic/claude-test' } });
  const run = await waitForState(ctx, key, runId, ['FAILED']);
  const status = run.status_message as Status;
  expect(status.error_code).toBe('feature_not_available');
  expect(status.message).toContain('ANTHROPIC_API_KEY');
  expect(status.retryable).toBe(false);
  expect(run.agent_config).toMatchObject({ model_id: 'anthropic/claude-test' });
});

test('without OPENAI_API_KEY an openai model fails the run, naming OPENAI_API_KEY', async () => {
  const bare = await createTestContext({ env: { OPENAI_API_KEY: '' } });
  try {
    const { key } = await bare.newTeamKey();
    const runId = await createRun(bare, key, { prompt: 'hello' });
    const run = await waitForState(bare, key, runId, ['FAILED']);
    expect(run.status_message).toMatchObject({ error_code: 'feature_not_available' });
    expect((run.status_message as Status).message).toContain('OPENAI_API_KEY');
    expect(run.agent_config).toMatchObject({ model_id: 'openai/test-model' });
  } finally {
    await bare.close();
  }
});

test('a provider 4xx fails the run at once with the provider message', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('rejected');
  ctx.model.script(marker, () => ({ status: 400, error: 'This model maximum context length is 8 tokens' }));
  const runId = await createRun(ctx, key, { prompt: `Too long ${marker}` });
  const run = await waitForState(ctx, key, runId, ['FAILED']);
  const status = run.status_message as Status;
  expect(status.message).toContain('This model maximum context length is 8 tokens');
  expect(status.message).toContain('HTTP 400');
  expect(status.error_code).toBe('invalid_request');
  expect(ctx.model.calls(marker)).toHaveLength(1);
});

test('a provider outage is retried with backoff and the run succeeds when it recovers', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('flaky');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { status: 503, error: 'overloaded' }
      : call === 2
        ? { status: 429, error: 'slow down' }
        : { text: 'ok' },
  );
  const runId = await createRun(ctx, key, { prompt: `Flaky ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(ctx.model.calls(marker)).toHaveLength(3);
});

test('an outage that outlasts the retries ends the run ERROR, a platform failure', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('down');
  ctx.model.script(marker, () => ({ status: 503, error: 'service unavailable' }));
  const runId = await createRun(ctx, key, { prompt: `Down ${marker}` });
  const run = await waitForState(ctx, key, runId, ['ERROR']);
  const status = run.status_message as Status;
  expect(status.error_code).toBe('resource_unavailable');
  expect(status.retryable).toBe(true);
  expect(status.message).toMatch(/503|service unavailable/);
  expect(ctx.model.calls(marker)).toHaveLength(ctx.config.models.retry.maxAttempts);
  const list = await ctx.api.get('/api/v1/agent/runs?state=ERROR').set(auth(key));
  expect(list.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([runId]);
});
