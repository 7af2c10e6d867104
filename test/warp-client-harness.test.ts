import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureWarpClient, WARP_CLIENT } from '../infra/python-client';
import { auth } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

const run = promisify(execFile);

/**
 * The newest official Python client (`warp-platform-sdk`), with strict response validation, runs
 * Claude Code with its team's managed secret and reads the run's harness usage
 * (test/contract/warp_client_harness.py).
 */
let ctx: TestContext;
let python: string;
beforeAll(async () => {
  python = await ensureWarpClient();
  ctx = await createTestContext();
}, 360_000);
afterAll(async () => {
  await ctx?.close();
});

test(`${WARP_CLIENT} runs Claude Code with config.harness and a team secret, strictly validated`, async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const secret = `sk-ant-warp-${uniqueName('k')}`;
  const stored = await ctx.api.post('/api/v1/agent/secrets').set(auth(key)).send({ name: 'claude-key', value: secret });
  expect(stored.status).toBe(201);
  const marker = uniqueName('warp-claude');
  ctx.model.script(marker, (req, call) =>
    req.apiKey !== secret
      ? { status: 401, error: 'not the team key' }
      : call === 1
        ? { text: '', toolCalls: [{ name: 'Bash', arguments: { command: 'echo hi' } }] }
        : { text: 'hello' },
  );
  let out: { stdout: string };
  try {
    out = await run(python, [path.join(__dirname, 'contract', 'warp_client_harness.py')], {
      env: {
        ...process.env,
        WARP_BASE_URL: `${ctx.baseUrl}/api/v1`,
        WARP_API_KEY: key,
        MARKER: marker,
        SECRET_NAME: 'claude-key',
      },
      timeout: 180_000,
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`the Python client failed:\n${stderr ?? ''}\n${stdout ?? ''}`);
  }
  const seen = JSON.parse(out.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
  expect(seen).toEqual({
    run_id: expect.any(String),
    state: 'SUCCEEDED',
    harness: 'claude',
    usage_available: true,
    usage_harness: 'CLAUDE_CODE',
    tool_calls_total: 1,
  });
  expect(ctx.model.calls(marker).map((c) => c.apiKey)).toEqual([secret, secret]);
}, 300_000);

test(`${WARP_CLIENT} keeps a harness and its secret on an agent and on a schedule, strictly validated`, async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  for (const [name, value] of [
    ['agent-claude', 'sk-ant-api-warp-agent'],
    ['agent-codex', 'sk-openai-warp-agent'],
  ]) {
    expect((await ctx.api.post('/api/v1/agent/secrets').set(auth(key)).send({ name, value })).status).toBe(201);
  }
  let out: { stdout: string };
  try {
    out = await run(python, [path.join(__dirname, 'contract', 'warp_client_agent_harness.py')], {
      env: {
        ...process.env,
        WARP_BASE_URL: `${ctx.baseUrl}/api/v1`,
        WARP_API_KEY: key,
        AGENT_NAME: uniqueName('warp-agent'),
        CLAUDE_SECRET: 'agent-claude',
        CODEX_SECRET: 'agent-codex',
      },
      timeout: 120_000,
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`the Python client failed:\n${stderr ?? ''}\n${stdout ?? ''}`);
  }
  const claude = {
    harness: { type: 'claude', model_id: 'claude-haiku-4-5' },
    base_harness: 'claude',
    harness_auth_secrets: { claude_auth_secret_name: 'agent-claude' },
  };
  const codex = {
    harness: { type: 'codex', reasoning_level: 'high' },
    base_harness: 'codex',
    harness_auth_secrets: { codex_auth_secret_name: 'agent-codex' },
  };
  expect(JSON.parse(out.stdout.trim().split('\n').pop()!)).toEqual({
    created: claude,
    kept: claude,
    replaced: codex,
    got: codex,
    listed: [codex],
    schedule: { type: 'claude', model_id: 'claude-sonnet-4-5' },
    cleared: { harness: { type: 'oz' }, base_harness: 'oz', harness_auth_secrets: null },
  });
}, 180_000);
