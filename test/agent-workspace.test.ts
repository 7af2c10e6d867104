import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runWorkflowId } from '../workflows/run-contract';
import { createEnvironment } from './helpers/environments';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { CONTINUE_AS_NEW_SUGGESTED_AT } from './stack/server-settings';
import { hostPidsRunning } from './helpers/host-processes';
import { createGitHost } from './helpers/git-fixtures';
import { gate } from './helpers/scripted-model';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { sessionPagePath } from './helpers/session-links';

const git = createGitHost();
git.addRepo('acme', 'widgets', {
  'README.md': '# Widgets\n',
  'src/widget.ts': "export const colour = 'red';\n",
});

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: {
      GIT_BASE_URL: git.baseUrl,
      MODEL_PRICES: JSON.stringify({ 'openai/test-model': { input: 1, output: 2 } }),
      AGENT_MAX_STEPS: '100',
    },
  });
});
afterAll(async () => {
  await ctx?.close();
});

const workspaceOf = (runId: string) => path.join(ctx.config.workspace.dir, runId);

test('the agent works in the environment: clones, setup, a command that writes a file, an edit, diffs in the transcript', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, {
    name: 'widgets',
    github_repos: [{ owner: 'acme', repo: 'widgets' }],
    setup_commands: ['echo setting up && ls widgets'],
  });
  const marker = uniqueName('tools');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return {
        text: 'Writing a file.',
        toolCalls: [{ name: 'run_command', arguments: { command: 'echo hello > widgets/out.txt && echo wrote' } }],
      };
    if (call === 2) {
      return {
        text: '',
        toolCalls: [
          { name: 'edit_file', arguments: { path: 'widgets/src/widget.ts', old_text: "'red'", new_text: "'blue'" } },
        ],
      };
    }
    return { text: 'Done: wrote out.txt and made the widget blue.' };
  });
  const runId = await createRun(ctx, key, { prompt: `Paint it blue ${marker}`, config: { environment_id: envId } });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.agent_config).toMatchObject({ environment_id: envId });

  const calls = ctx.model.calls(marker);
  expect(calls).toHaveLength(3);
  const toolReply = calls[1]!.messages.find((m) => m.role === 'tool');
  expect(toolReply?.content).toMatch(/Exit code 0[\s\S]*wrote/);
  expect(calls[2]!.messages.filter((m) => m.role === 'tool').pop()?.content).toMatch(/Replaced 1 occurrence/);

  expect(readFileSync(path.join(workspaceOf(runId), 'widgets/out.txt'), 'utf8')).toBe('hello\n');
  const events = await transcript(ctx, runId);
  const setup = events.find((e) => e.kind === 'command');
  expect(setup?.payload).toMatchObject({ command: 'echo setting up && ls widgets', exit_code: 0 });
  expect(String(setup?.payload.output)).toContain('README.md');
  const command = events.find((e) => e.kind === 'tool_call' && e.payload.name === 'run_command');
  expect(command?.payload).toMatchObject({
    exit_code: 0,
    input: { command: 'echo hello > widgets/out.txt && echo wrote' },
  });
  expect(command?.payload.duration_ms).toEqual(expect.any(Number));
  const diffs = events
    .filter((e) => e.kind === 'files_changed')
    .flatMap((e) => e.payload.files as { repo: string; path: string; diff: string }[]);
  expect(diffs.find((f) => f.path === 'out.txt')?.diff).toContain('+hello');
  const widget = diffs.find((f) => f.path === 'src/widget.ts');
  expect(widget?.repo).toBe('widgets');
  expect(widget?.diff).toContain("-export const colour = 'red';");
  expect(widget?.diff).toContain("+export const colour = 'blue';");

  const page = await ctx.api.get(sessionPagePath(run.session_link));
  expect(page.text).toContain('echo hello &gt; widgets/out.txt');
  expect(page.text).toContain('<span class="add">+export const colour = &#39;blue&#39;;</span>');
  await recordReplayFixture(ctx, runId, 'environment-setup-tools-diffs');
});

test('a failing setup command ends the run FAILED with environment_setup_failed and marks the environment', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, {
    name: 'broken',
    github_repos: [{ owner: 'acme', repo: 'widgets' }],
    setup_commands: ['true', 'echo compiling; echo "error: missing toolchain" >&2; exit 3'],
  });
  const marker = uniqueName('setup-fails');
  ctx.model.script(marker, () => ({ text: 'should not be asked' }));
  const runId = await createRun(ctx, key, { prompt: `Build ${marker}`, config: { environment_id: envId } });
  const run = await waitForState(ctx, key, runId, ['FAILED']);
  const status = run.status_message as { message: string; error_code: string };
  expect(status.error_code).toBe('environment_setup_failed');
  expect(status.message).toContain('exit 3');
  expect(status.message).toContain('error: missing toolchain');
  expect(ctx.model.calls(marker)).toHaveLength(0);
  const env = await ctx.api.get(`/api/v1/agent/environments/${envId}`).set(auth(key));
  expect(env.body.setup_failed).toBe(true);
});

test('an unknown environment is rejected at create time', async () => {
  const { key } = await ctx.newTeamKey();
  const res = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'x', config: { environment_id: 'AAAAAAAAAAAAAAAAAAAAAA' } });
  expect(res.status).toBe(404);
  expect(res.body.detail).toContain('config.environment_id');
});

test('the step limit ends the run FAILED saying which limit', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('loop');
  ctx.model.script(marker, () => ({ text: '', toolCalls: [{ name: 'list_directory', arguments: {} }] }));
  const runId = await createRun(ctx, key, { prompt: `Loop forever ${marker}`, config: { max_steps: 3 } });
  const run = await waitForState(ctx, key, runId, ['FAILED']);
  expect((run.status_message as { message: string }).message).toMatch(/step limit of 3/);
  expect(ctx.model.calls(marker)).toHaveLength(3);
});

test('a follow-up changes what the agent does next', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('steer');
  const first = gate<{ text: string; toolCalls: { name: string; arguments: Record<string, unknown> }[] }>();
  ctx.model.script(marker, (req, call) => {
    if (call === 1) return { hold: first.promise };
    const lastUser = req.messages.filter((m) => m.role === 'user').pop()?.content ?? '';
    if (call === 2 && lastUser.includes('b.txt')) {
      return { text: '', toolCalls: [{ name: 'write_file', arguments: { path: 'b.txt', content: 'steered' } }] };
    }
    return { text: 'ok' };
  });
  const runId = await createRun(ctx, key, { prompt: `Write a.txt ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: 'Write b.txt instead.' });
  first.release({ text: 'Thinking about a.txt', toolCalls: [] });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(readFileSync(path.join(workspaceOf(runId), 'b.txt'), 'utf8')).toBe('steered');
  expect(existsSync(path.join(workspaceOf(runId), 'a.txt'))).toBe(false);
});

test('cancelling during `sleep 600` kills the command within 5 seconds', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('sleep');
  ctx.model.script(marker, () => ({
    text: '',
    toolCalls: [{ name: 'run_command', arguments: { command: `exec -a ${marker} sleep 600` } }],
  }));
  const runId = await createRun(ctx, key, { prompt: `Sleep ${marker}` });
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 1,
    'the command to start',
  );
  const alive = () => hostPidsRunning(marker).length > 0;
  const cancelledAt = Date.now();
  await ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(key)).expect(200);
  await waitFor(
    async () => alive(),
    (a) => !a,
    'the sleep to be killed',
    5_000,
  );
  console.log(`sleep 600 killed ${Date.now() - cancelledAt} ms after the cancel request`);
  await waitForState(ctx, key, runId, ['CANCELLED']);
  // The workspace goes with the cancelled run.
  await waitFor(
    async () => existsSync(workspaceOf(runId)),
    (exists) => !exists,
    'the workspace to be removed',
  );
  await recordReplayFixture(ctx, runId, 'cancel-during-command');
});

test('a ten-step run against the scripted model', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('ten');
  ctx.model.script(marker, (_req, call) =>
    call < 10
      ? { text: '', toolCalls: [{ name: 'write_file', arguments: { path: `f${call}.txt`, content: String(call) } }] }
      : { text: 'all done' },
  );
  const started = Date.now();
  const runId = await createRun(ctx, key, { prompt: `Ten steps ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  const elapsed = Date.now() - started;
  const history = await ctx.client.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
  console.log(`ten-step run: ${elapsed} ms, ${history.events?.length} history events so far`);
  expect(ctx.model.calls(marker)).toHaveLength(10);
  // Ten calls of 5 input and 5 output tokens at $1 and $2 per million.
  const usage = (await getRun(ctx, key, runId)).request_usage as { total_tokens: number; inference_cost_usd: number };
  expect(usage.total_tokens).toBe(100);
  expect(usage.inference_cost_usd).toBeCloseTo(0.00015, 10);
  await recordReplayFixture(ctx, runId, 'ten-steps');
});

test('diffs leave out dependency directories of repositories without a .gitignore, and are capped per file', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('diffcap');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            {
              name: 'run_command',
              arguments: {
                command:
                  'mkdir -p node_modules/left-pad .venv/lib && echo "module.exports = 1" > node_modules/left-pad/index.js && echo x > .venv/lib/x.py && seq 1 100000 > numbers.txt && echo hi > notes.md',
              },
            },
          ],
        }
      : { text: 'done' },
  );
  const runId = await createRun(ctx, key, { prompt: `Install ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const files = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'files_changed')
    .flatMap((e) => e.payload.files as { path: string; diff: string }[]);
  expect(files.map((f) => f.path).sort()).toEqual(['notes.md', 'numbers.txt']);
  const numbers = files.find((f) => f.path === 'numbers.txt')!;
  expect(Buffer.byteLength(numbers.diff)).toBeLessThan(300 * 1024);
  expect(numbers.diff).toMatch(/\[\.\.\. diff cut: \d+ more bytes of this file's diff are not shown \.\.\.\]$/);
});

test('a turn longer than the history limit continues as new mid-turn and finishes', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('long');
  const steps = Math.ceil(CONTINUE_AS_NEW_SUGGESTED_AT / 6) + 10;
  ctx.model.script(marker, (_req, call) =>
    call < steps
      ? { text: '', toolCalls: [{ name: 'read_skill', arguments: { name: 'svc-platform' } }] }
      : { text: 'long turn done' },
  );
  const runId = await createRun(ctx, key, {
    prompt: `Long ${marker}`,
    config: { idle_timeout_minutes: 0, max_steps: steps + 5 },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(ctx.model.calls(marker)).toHaveLength(steps);
  const executions = await waitFor(
    async () => {
      const found: string[] = [];
      for await (const e of ctx.client.workflow.list({ query: `WorkflowId = '${runWorkflowId(runId)}'` }))
        found.push(e.runId);
      return found;
    },
    (found) => found.length >= 2,
    'the continued execution to be listed',
  );
  expect(executions.length).toBeGreaterThanOrEqual(2);
  // Every step ran exactly once across the executions.
  const tools = (await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call');
  expect(tools).toHaveLength(steps - 1);
  await recordReplayFixture(ctx, runId, 'continue-as-new-mid-turn');
});

test('the workspace outlives the run for its idle window, then goes', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('idle-ws');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'write_file', arguments: { path: 'keep.txt', content: 'x' } }] }
      : { text: 'done' },
  );
  const runId = await createRun(ctx, key, { prompt: `Idle ${marker}`, config: { idle_timeout_minutes: 0 } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  await waitFor(
    async () => existsSync(workspaceOf(runId)),
    (exists) => !exists,
    'the workspace to be removed after the idle window',
  );
  await recordReplayFixture(ctx, runId, 'idle-window-ends');
});

test('a command that leaves a background process behind returns at once; the process is killed with its group', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('background');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [{ name: 'run_command', arguments: { command: `(exec -a ${marker} sleep 300) & echo launched` } }],
        }
      : { text: 'done' },
  );
  const runId = await createRun(ctx, key, { prompt: `Background ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 20_000);
  const result = ctx.model.calls(marker)[1]!.messages.find((m) => m.role === 'tool');
  expect(result?.content).toMatch(/Exit code 0[\s\S]*launched/);
  await waitFor(
    async () => hostPidsRunning(marker).length > 0,
    (alive) => !alive,
    'the background sleep to be killed',
    5_000,
  );
});

test('a run started from a skill alone gives the model a first user message', async () => {
  const { key } = await ctx.newTeamKey();
  const res = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send({ skill: 'agent-runs/bundled:pr-comments' });
  expect(res.status).toBe(201);
  const run = await waitForState(ctx, key, res.body.run_id as string, ['SUCCEEDED']);
  expect(run.title).toBe('Run skill agent-runs/bundled:pr-comments');
  const events = await transcript(ctx, run.run_id);
  expect(events.find((e) => e.kind === 'assistant')?.payload.text).toBe('echo: Follow the instructions of your skill.');
});

test('a follow-up sent before a cancel does not bring the run back; one sent after does, with both in order', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cancel-order');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: held.promise } : { text: 'resumed' }));
  const runId = await createRun(ctx, key, { prompt: `Work ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'before cancel' })
    .expect(200);
  await ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(key)).expect(200);
  await waitForState(ctx, key, runId, ['CANCELLED']);
  const handle = ctx.client.workflow.getHandle(runWorkflowId(runId));
  await waitFor(
    () => handle.describe(),
    (d) => d.status.name === 'CANCELLED',
    'the workflow to end cancelled',
  );
  const cancelled = await getRun(ctx, key, runId);
  expect(cancelled.state).toBe('CANCELLED');
  expect(ctx.model.calls(marker)).toHaveLength(1);
  // The follow-up sent before the cancel is not lost from view: it waits, shown as pending.
  const conversation = await ctx.api
    .get(`/api/v1/agent/conversations/${cancelled.conversation_id as string}`)
    .set(auth(key))
    .expect(200);
  expect(conversation.body.actions).toContainEqual(
    expect.objectContaining({ kind: 'user_message', text: 'before cancel', followup: true, pending: true }),
  );
  const page = await ctx.api.get(sessionPagePath(cancelled.session_link)).expect(200);
  expect(page.text).toMatch(/Follow-up #1 \(normal\) · pending: delivered when the run continues/);

  await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'after cancel' })
    .expect(200);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const users = ctx.model
    .calls(marker)[1]!
    .messages.filter((m) => m.role === 'user')
    .map((m) => m.content);
  expect(users).toEqual([`Work ${marker}`, 'before cancel', 'after cancel']);
  await recordReplayFixture(ctx, runId, 'followup-around-cancel');
});
