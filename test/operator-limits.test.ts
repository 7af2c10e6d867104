import { auth } from './helpers/runs';
import { createTestContext, type TestContext } from './helpers/test-context';

/** AGENT_MAX_STEPS, AGENT_MAX_TOKENS and AGENT_MAX_IDLE_TIMEOUT_MINUTES cap what a run may ask for. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    worker: false,
    env: { AGENT_MAX_STEPS: '5', AGENT_MAX_TOKENS: '1000', AGENT_MAX_IDLE_TIMEOUT_MINUTES: '30' },
  });
});
afterAll(async () => {
  await ctx?.close();
});

test.each([
  ['max_steps', 6, 'AGENT_MAX_STEPS', 5],
  ['max_tokens', 1001, 'AGENT_MAX_TOKENS', 1000],
  ['idle_timeout_minutes', 31, 'AGENT_MAX_IDLE_TIMEOUT_MINUTES', 30],
])(
  'config.%s above the ceiling is 400 naming the limit, and nothing is created',
  async (field, value, variable, ceiling) => {
    const { key } = await ctx.newTeamKey();
    const res = await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: 'too much', config: { [field]: value } });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('invalid_request');
    expect(res.body.detail).toContain(`config.${field}`);
    expect(res.body.detail).toContain(variable);
    expect(res.body.detail).toContain(`at most ${ceiling}`);
    const list = await ctx.api.get('/api/v1/agent/runs').set(auth(key)).expect(200);
    expect(list.body.runs).toHaveLength(0);
  },
);

test('at the ceiling is accepted', async () => {
  const { key } = await ctx.newTeamKey();
  await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'just enough', config: { max_steps: 5, max_tokens: 1000, idle_timeout_minutes: 30 } })
    .expect(201);
});
