import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { claimHarnessInvocation } from '../db/harness-state';
import { expectReplayRecordsOnce } from './helpers/harness-replay';
import { hostPidsRunning } from './helpers/host-processes';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { sessionPagePath } from './helpers/session-links';

/** Claude Code (`config.harness.type: "claude"`) in the run's sandbox, against a scripted Anthropic Messages API. */

const PLATFORM_KEY = 'sk-ant-platform-key-for-tests';
type Status = { message: string; error_code: string };

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { ANTHROPIC_API_KEY: PLATFORM_KEY } });
});
afterAll(async () => {
  await ctx?.close();
});

const claude = { harness: { type: 'claude' } };

async function storeSecret(key: string, body: Record<string, unknown>): Promise<void> {
  const res = await ctx.api.post('/api/v1/agent/secrets').set(auth(key)).send(body);
  expect([res.status, res.body]).toEqual([201, expect.objectContaining({ name: body.name })]);
}

test('a command Claude Code runs writes a file; its output is in the conversation; the provider gets the key, the sandbox none', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: 'Writing the file.',
          toolCalls: [{ name: 'Bash', arguments: { command: 'echo hello > out.txt && cat out.txt && env' } }],
        }
      : { text: 'Done: out.txt says hello.' },
  );
  const runId = await createRun(ctx, key, { prompt: `Write out.txt ${marker}`, config: claude });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);

  expect(readFileSync(path.join(ctx.config.workspace.dir, runId, 'out.txt'), 'utf8')).toBe('hello\n');
  expect(run.status_message).toEqual({ message: 'Done: out.txt says hello.' });
  expect(run.agent_config).toMatchObject({ harness: { type: 'claude' } });

  // The provider saw the operator's key, through the gateway; streamed Messages API calls.
  const calls = ctx.model.calls(marker);
  expect(calls).toHaveLength(2);
  expect(calls.map((c) => [c.protocol, c.apiKey, c.stream])).toEqual([
    ['anthropic', PLATFORM_KEY, true],
    ['anthropic', PLATFORM_KEY, true],
  ]);
  expect(calls[0]!.tools).toContain('Bash');
  // The second call carries the command's output back to the model.
  expect(calls[1]!.messages.map((m) => m.content).join('\n')).toContain('hello');

  const events = await transcript(ctx, runId);
  const tool = events.find((e) => e.kind === 'tool_call')!;
  expect(tool.payload).toMatchObject({ name: 'Bash', is_error: false });
  const output = tool.payload.output as string;
  expect(output.startsWith('hello\n')).toBe(true);
  // Inside the sandbox: no provider key, no platform secret; only the invocation's gateway token.
  expect(output).not.toContain(PLATFORM_KEY);
  expect(output).not.toMatch(/GIT_TOKEN|DATABASE_URL|AGENT_RUNS_SECRETS_KEY/);
  expect(output).toMatch(/^ANTHROPIC_API_KEY=arg_/m);
  expect(output).toMatch(/^HOME=\/home\/agent$/m);
  expect(events.filter((e) => e.kind === 'assistant').map((e) => e.payload.text)).toEqual([
    'Writing the file.',
    '',
    'Done: out.txt says hello.',
  ]);
  expect(events.find((e) => e.kind === 'assistant')!.payload.model_id).toMatch(/^claude\//);
  expect(events.find((e) => e.kind === 'files_changed')!.payload.files).toEqual([
    expect.objectContaining({ path: 'out.txt' }),
  ]);

  // Claude Code's own counters, as the official clients read them.
  const usage = await ctx.api.get(`/api/v1/agent/runs/${runId}/harness-usage`).set(auth(key));
  expect(usage.status).toBe(200);
  expect(usage.body).toMatchObject({
    available: true,
    run_id: runId,
    conversation_id: run.conversation_id,
    usage: {
      harness: 'CLAUDE_CODE',
      metricsVersion: 1,
      captureSequence: 1,
      executionId: 1,
      snapshot: {
        coverage: { tokenStatus: 'known', toolStatus: 'known' },
        payload: { toolCalls: { byName: { Bash: 1 }, total: 1 }, usage: { input_tokens: expect.any(Number) } },
      },
    },
  });
  expect((run.request_usage as { total_tokens: number }).total_tokens).toBeGreaterThan(0);

  // The conversation endpoint shows it as it shows a run of this service's own loop.
  const conversation = await ctx.api.get(`/api/v1/agent/conversations/${run.conversation_id as string}`).set(auth(key));
  expect(conversation.status).toBe(200);
  const actions = conversation.body.actions as { kind: string; tool?: string; text?: string; output?: string }[];
  expect(actions.map((a) => a.kind)).toEqual([
    'user_message',
    'agent_message',
    'agent_message',
    'tool_call',
    'agent_message',
    'files_changed',
  ]);
  expect(actions[3]).toMatchObject({ tool: 'Bash', output: expect.stringMatching(/^hello\n/) });
  expect(actions[4]!.text).toBe('Done: out.txt says hello.');

  // The raw event stream is kept as an artifact of the run.
  const artifacts = run.artifacts as { data: { filename: string } }[];
  expect(artifacts.map((a) => a.data.filename)).toContain('claude-t1-s0-a1.jsonl');

  // The transcript page's header names the model Claude Code used and the run's tokens; its
  // blocks claim no count the CLI did not report per message.
  const page = await ctx.api.get(sessionPagePath(run.session_link));
  expect(page.status).toBe(200);
  const header = /<p class="meta">Run [\s\S]*?<\/p>/.exec(page.text)?.[0] ?? '';
  expect(header).toMatch(/· model claude\/[^ ]+ ·/);
  expect(header).toContain(`· ${(run.request_usage as { total_tokens: number }).total_tokens} tokens`);
  expect(page.text).not.toContain(' · 0 tokens');
});

test('a follow-up resumes the session: the second turn is sent the first', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-resume');
  const followup = `And now a second file ${uniqueName('f')}`;
  ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `First task ${marker}`, config: claude });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  const res = await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: followup });
  expect(res.status).toBe(200);
  await ctx.model.waitForCalls(marker, 2);
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(run.status_message).toEqual({ message: 'answer 2' });

  const second = ctx.model.calls(marker)[1]!.messages.map((m) => `${m.role}: ${m.content}`);
  // The resumed session holds the first turn, then the follow-up.
  expect(second.find((m) => m.includes(`First task ${marker}`))).toMatch(/^user: /);
  expect(second).toContain('assistant: answer 1');
  expect(second.at(-1)).toContain(followup);
  const usage = await ctx.api.get(`/api/v1/agent/runs/${runId}/harness-usage`).set(auth(key));
  expect(usage.body.usage).toMatchObject({ captureSequence: 2, executionId: 2 });
});

test("plan mode: Claude Code's final answer is the run's PLAN artifact, and the run says a plan awaits approval", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-plan');
  ctx.model.script(marker, () => ({ text: '# Ship the report\n\n1. Read the data.\n2. Write report.md.' }));
  const runId = await createRun(ctx, key, { prompt: `Plan the report ${marker}`, mode: 'plan', config: claude });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect((run.status_message as { message: string }).message).toContain(
    'Plan "Ship the report" (version 1) awaits approval',
  );
  const plans = (run.artifacts as { artifact_type: string; data: Record<string, unknown> }[]).filter(
    (a) => a.artifact_type === 'PLAN',
  );
  expect(plans).toEqual([
    expect.objectContaining({ data: expect.objectContaining({ title: 'Ship the report', version: 1 }) }),
  ]);
  const artifact = await ctx.api.get(`/api/v1/agent/artifacts/${String(plans[0]!.data.artifact_uid)}`).set(auth(key));
  expect(artifact.body.data.content).toBe('# Ship the report\n\n1. Read the data.\n2. Write report.md.');
  // The CLI was asked to plan, not to change anything.
  const prompt = ctx.model
    .calls(marker)[0]!
    .messages.map((m) => m.content)
    .join('\n');
  expect(prompt).toContain('[Plan mode:');
});

test("a team's managed secret is the key the provider gets; one the provider refuses fails the run as authentication_required", async () => {
  const { key: admin } = await ctx.newTeamKey('personal', uniqueName('team'), 'admin');
  const teamKey = `sk-ant-team-${uniqueName('k')}`;
  await storeSecret(admin, { name: 'team-claude', value: teamKey });
  const marker = uniqueName('claude-secret');
  ctx.model.script(marker, (req) =>
    req.apiKey === teamKey ? { text: 'hello from the team key' } : { status: 401, error: 'invalid x-api-key' },
  );
  const config = { ...claude, harness_auth_secrets: { claude_auth_secret_name: 'team-claude' } };
  const ok = await createRun(ctx, admin, { prompt: `Say hello ${marker}`, config });
  expect((await waitForState(ctx, admin, ok, ['SUCCEEDED'], undefined, 120_000)).status_message).toEqual({
    message: 'hello from the team key',
  });
  expect(ctx.model.calls(marker).map((c) => c.apiKey)).toEqual([teamKey]);

  // The team replaces the secret with one the provider refuses.
  await ctx.api.post('/api/v1/agent/secrets').set(auth(admin)).send({ name: 'team-claude', value: 'sk-ant-revoked' });
  const refused = await createRun(ctx, admin, { prompt: `Again ${marker}`, config });
  const run = await waitForState(ctx, admin, refused, ['FAILED'], undefined, 120_000);
  const status = run.status_message as Status;
  expect(status.error_code).toBe('authentication_required');
  expect(status.message).toContain('"team-claude"');
  expect(status.message).toContain('HTTP 401');
});

test("the operator's key refused by the provider fails the run with a clear error for the operator", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-401');
  ctx.model.script(marker, () => ({ status: 401, error: 'invalid x-api-key' }));
  const runId = await createRun(ctx, key, { prompt: `Hello ${marker}`, config: claude });
  const status = (await waitForState(ctx, key, runId, ['FAILED'], undefined, 120_000)).status_message as Status;
  expect(status.error_code).toBe('feature_not_available');
  expect(status.message).toMatch(/refused the service's key for Claude Code \(HTTP 401: invalid x-api-key\)/);
});

test('the token budget: the gateway refuses the call past it and the run fails as budget_exceeded', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-budget');
  // Every call spends 400 tokens and asks for another command: the budget of 500 ends it at the second.
  ctx.model.script(marker, (_req, call) => ({
    text: `step ${call}`,
    totalTokens: 400,
    toolCalls: [{ name: 'Bash', arguments: { command: `echo ${call}` } }],
  }));
  const runId = await createRun(ctx, key, { prompt: `Loop ${marker}`, config: { ...claude, max_tokens: 500 } });
  const run = await waitForState(ctx, key, runId, ['FAILED'], undefined, 120_000);
  const status = run.status_message as Status;
  expect(status.error_code).toBe('budget_exceeded');
  expect(status.message).toContain('refused its calls because');
  expect(status.message).toContain('token budget of 500 tokens is spent');
  expect(ctx.model.calls(marker)).toHaveLength(2);
});

test('cancelling a run whose command sleeps stops Claude Code and the command within seconds', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-cancel');
  const sleeper = `sleeper-${marker}`;
  ctx.model.script(marker, () => ({
    text: '',
    toolCalls: [{ name: 'Bash', arguments: { command: `exec -a ${sleeper} sleep 600`, timeout: 600000 } }],
  }));
  const runId = await createRun(ctx, key, { prompt: `Sleep ${marker}`, config: claude });
  await waitFor(
    async () => hostPidsRunning(sleeper).length,
    (n) => n > 0,
    'the sandboxed sleep to start',
    60_000,
  );
  const cancelledAt = Date.now();
  expect((await ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(key))).status).toBe(200);
  await waitForState(ctx, key, runId, ['CANCELLED'], undefined, 10_000);
  await waitFor(
    async () => hostPidsRunning(sleeper).length,
    (n) => n === 0,
    'the sleep to be gone',
    10_000,
  );
  expect(Date.now() - cancelledAt).toBeLessThan(10_000);
  expect((await getRun(ctx, key, runId)).state).toBe('CANCELLED');
});

test("files Claude Code's commands write up to AGENT_WORKSPACE_MAX_BYTES stop it while it works, and the run fails as budget_exceeded", async () => {
  const limited = await createTestContext({
    env: {
      ANTHROPIC_API_KEY: PLATFORM_KEY,
      AGENT_WORKSPACE_MAX_BYTES: String(24 * 1024 * 1024),
      AGENT_SANDBOX_MAX_FILE_SIZE_MB: '8',
    },
  });
  try {
    const { key } = await limited.newTeamKey();
    const marker = uniqueName('claude-disk');
    const sleeper = `sleeper-${marker}`;
    // Each file is under the per-file limit; together they are not. The command then stays, so
    // only a measurement made while the CLI works can end it.
    limited.model.script(marker, (_req, call) =>
      call === 1
        ? {
            text: '',
            toolCalls: [
              {
                name: 'Bash',
                arguments: {
                  command: `for i in 1 2 3 4 5; do head -c 7M /dev/urandom > f$i; done; exec -a ${sleeper} sleep 600`,
                  timeout: 600000,
                },
              },
            ],
          }
        : { text: 'should not be asked again' },
    );
    const runId = await createRun(limited, key, { prompt: `Fill ${marker}`, config: claude });
    const run = await waitForState(limited, key, runId, ['FAILED', 'SUCCEEDED', 'ERROR'], undefined, 60_000);
    expect([run.state, run.status_message]).toEqual([
      'FAILED',
      expect.objectContaining({
        error_code: 'budget_exceeded',
        message:
          "Claude Code was stopped: the run's files reached its disk limit (AGENT_WORKSPACE_MAX_BYTES). Its files are removed: a follow-up starts in a fresh workspace.",
      }),
    ]);
    expect(limited.model.calls(marker)).toHaveLength(1);
    await waitFor(
      async () => hostPidsRunning(sleeper).length,
      (n) => n === 0,
      'the command to be gone with the CLI',
      10_000,
    );
  } finally {
    await limited.close();
  }
});

test("a session that is gone from the run's home (a workspace rebuilt elsewhere) is replaced by one told the conversation so far", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-lost');
  const followup = `Then the second part ${uniqueName('f')}`;
  ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `First task ${marker}`, config: claude });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  // Claude Code keeps its sessions under ~/.claude: as on a worker that never ran this run.
  const home = path.join(ctx.config.workspace.dir, '.sandbox', runId, 'home');
  expect(existsSync(path.join(home, '.claude'))).toBe(true);
  rmSync(path.join(home, '.claude'), { recursive: true });

  expect(
    (await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: followup })).status,
  ).toBe(200);
  await ctx.model.waitForCalls(marker, 2);
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(run.status_message).toEqual({ message: 'answer 2' });
  // One user message in a new session: the recap of the first turn, then the follow-up.
  const resumed = ctx.model.calls(marker)[1]!.messages;
  const told = resumed.map((m) => m.content).join('\n');
  expect(told).toContain(`User: First task ${marker}`);
  expect(told).toContain('You: answer 1');
  expect(told.indexOf('You: answer 1')).toBeLessThan(told.indexOf(followup));
  const notices = (await transcript(ctx, runId)).filter((e) => e.kind === 'notice').map((e) => e.payload.message);
  expect(notices.filter((n) => String(n).includes('resume'))).toEqual([
    expect.stringMatching(/^Claude Code could not resume its session \S+ on this worker/),
  ]);
});

test("an interrupted invocation's output is recorded once, whatever part of it was recorded live, however often it is replayed", async () => {
  await expectReplayRecordsOnce(
    ctx,
    'claude',
    (marker) => ({
      lines: [
        { type: 'system', subtype: 'init', session_id: `s-${marker}` },
        { type: 'assistant', message: { content: [{ type: 'text', text: `one ${marker}` }] } },
        {
          type: 'assistant',
          message: { content: [{ type: 'tool_use', id: 'tu1', name: 'Bash', input: { command: 'echo out' } }] },
        },
        {
          type: 'user',
          message: { content: [{ type: 'tool_result', tool_use_id: 'tu1', content: `out ${marker}` }] },
        },
        { type: 'assistant', message: { content: [{ type: 'text', text: `two ${marker}` }] } },
        { type: 'result', subtype: 'success', result: `two ${marker}`, usage: { input_tokens: 120, output_tokens: 7 } },
      ],
      usage: { input_tokens: 120, output_tokens: 7 },
      entries: [
        ['assistant', `one ${marker}`],
        ['assistant', ''],
        ['tool_call', `out ${marker}`],
        ['assistant', `two ${marker}`],
      ],
    }),
    3,
  );
});

test('each start of a step is an attempt of its own, counted by the service whatever Temporal numbers it', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-attempts');
  ctx.model.script(marker, () => ({ text: 'ok' }));
  const runId = await createRun(ctx, key, { prompt: `Say ok ${marker}`, config: claude });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  // A step rescheduled after its queue's schedule-to-start timeout is Temporal attempt 1 again:
  // the keys of its transcript entries come from this count, so they cannot collide.
  const claim = (step: string) =>
    ctx.dataSource.transaction(
      async (tx) => (await claimHarnessInvocation(tx, runId, 'claude', step)).state.stepAttempt,
    );
  expect([await claim('t1-s0'), await claim('t1-s0'), await claim('t2-s0'), await claim('t2-s0')]).toEqual([
    2, 3, 1, 2,
  ]);
});

test('what Claude Code cannot take is a 400 naming the field, and no run is made', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-refused');
  const refused = async (config: Record<string, unknown>) => {
    const res = await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: `Nothing ${marker}`, config });
    expect(res.status).toBe(400);
    return (res.body as { detail: string }).detail;
  };
  expect(await refused({ harness: { type: 'claude', reasoning_level: 'high' } })).toBe(
    '`config.harness.reasoning_level`: Claude Code has no reasoning level to set; leave it out (Codex CLI takes one).',
  );
  expect(await refused({ harness: { type: 'cursor' } })).toMatch(
    /`config\.harness\.type`.*the harnesses are oz, claude, codex, gemini/,
  );
  expect(
    await refused({ harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'none' } }),
  ).toBe(
    '`config.harness_auth_secrets.claude_auth_secret_name`: your team has no secret named "none". Store it first with `POST /api/v1/agent/secrets` (or `agent-runs secrets set none`).',
  );
  const [{ count }] = (await ctx.dataSource.query(`SELECT count(*)::int AS count FROM runs WHERE prompt LIKE $1`, [
    `%${marker}%`,
  ])) as [{ count: number }];
  expect(count).toBe(0);
});

test('a message too long to hand to a CLI fails the run at once, saying so (not retried)', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-long');
  ctx.model.script(marker, () => ({ text: 'never asked' }));
  // 60,000 characters of three bytes each: a valid prompt, past Linux's 128 KiB per argument.
  const runId = await createRun(ctx, key, { prompt: `${marker} ${'€'.repeat(60_000)}`, config: claude });
  const status = (await waitForState(ctx, key, runId, ['FAILED'], undefined, 60_000)).status_message as Status;
  expect(status.error_code).toBe('invalid_request');
  expect(status.message).toMatch(
    /^The message for Claude Code is \d+ bytes; a CLI is given at most 131071 bytes at once\./,
  );
  expect(ctx.model.calls(marker)).toEqual([]);
});
