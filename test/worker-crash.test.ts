import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { harnessOutputDir } from '../activities/workspace/workspace-paths';
import { RUN_STATES, stateRank, type RunState } from '../core/run-state';
import { createFactory, history as runHistory, listRuns, markerText, toolResult } from './helpers/factories';
import { gate } from './helpers/scripted-model';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { hostPidsRunning } from './helpers/host-processes';
import {
  killWorker,
  spawnWorker as spawnWorkerProcess,
  waitUntilPolling,
  within,
  type WorkerChild,
} from './helpers/worker-processes';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

const workers: WorkerChild[] = [];
let ctx: TestContext;

beforeAll(async () => {
  // The API passes the heartbeat timeout to every workflow it starts: it decides how fast a dead worker is noticed.
  ctx = await createTestContext({ worker: false, env: { ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3' } });
});

/** Every test ends with no worker of its own alive, so the next test's runs go only to its workers. */
async function killWorkers(): Promise<void> {
  for (const w of workers) await killWorker(w);
}

afterEach(killWorkers);

afterAll(async () => {
  await killWorkers();
  await ctx?.close();
});

function spawnWorker(c: TestContext, workspaceDir = c.config.workspace.dir, workerId?: string): WorkerChild {
  const child = spawnWorkerProcess(c, { workspaceDir, workerId });
  workers.push(child);
  return child;
}

/** Polls a run in the background and records every state and `updated_at` it was seen with. */
function recordHistory(c: TestContext, key: string, runId: string) {
  const seen: { state: string; updatedAt: string }[] = [];
  let stopped = false;
  let failure: unknown;
  const poll = async (): Promise<boolean> => {
    try {
      const run = await getRun(c, key, runId);
      seen.push({ state: run.state, updatedAt: run.updated_at as string });
      return true;
    } catch (err) {
      failure = err;
      return false;
    }
  };
  const loop = (async () => {
    while (!stopped && (await poll())) await new Promise((resolve) => setTimeout(resolve, 25));
  })();
  return {
    seen,
    /**
     * Stops polling after one last read (a read in flight when the run ended may have been answered
     * just before the end); resolves with what made polling fail, if anything did.
     */
    async stop(): Promise<unknown> {
      stopped = true;
      await loop;
      if (failure === undefined) await poll();
      return failure;
    },
  };
}

const userMessages = (messages: { role: string; content: string }[]) =>
  messages.filter((m) => m.role === 'user').map((m) => m.content);

jest.setTimeout(180_000);

test('a worker SIGKILLed mid-model-call: another worker finishes the run, the follow-up lands exactly once', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('worker-crash');
  const prompt = `Port the parser ${marker}`;
  const followupMessage = `Also keep the old API ${uniqueName('followup')}`;
  const firstCall = gate<{ text: string }>();
  // Call 1 is held (the worker dies in it); every later call answers at once.
  ctx.model.script(marker, (_req, call) =>
    call === 1 ? { hold: firstCall.promise } : { text: `done (call ${call})` },
  );

  const first = spawnWorker(ctx);
  const firstStartupMs = await waitUntilPolling(ctx, first, 'the first worker');
  const runId = await createRun(ctx, key, { prompt });
  const history = recordHistory(ctx, key, runId);
  let pollFailure: unknown;
  try {
    await within(ctx.model.waitForCalls(marker, 1), 30_000, 'the first model call', first);
    expect((await getRun(ctx, key, runId)).state).toBe('INPROGRESS');

    const res = await ctx.api
      .post(`/api/v1/agent/runs/${runId}/followups`)
      .set(auth(key))
      .send({ message: followupMessage });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      run_id: runId,
      state: 'INPROGRESS',
      followup_id: expect.any(String),
      outcome: 'live_session',
    });

    const killedAt = Date.now();
    first.proc.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    // The model server saw the killed worker's request go away mid-call.
    await waitFor(
      async () => ctx.model.aborted.includes(marker),
      (aborted) => aborted,
      'the killed worker’s model request to be dropped',
      10_000,
    );
    expect((await getRun(ctx, key, runId)).state).toBe('INPROGRESS');

    const second = spawnWorker(ctx);
    const secondStartupMs = await waitUntilPolling(ctx, second, 'the second worker');
    await within(ctx.model.waitForCalls(marker, 2), 60_000, 'the retried model call on the second worker', second);
    const retriedAfterMs = Date.now() - killedAt;
    const done = await within(
      waitForState(ctx, key, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'], undefined, 60_000),
      65_000,
      'the run to end on the second worker',
      second,
    );
    const recoveredAfterMs = Date.now() - killedAt;
    // Releasing the dead call changes nothing: nobody is listening for it any more.
    firstCall.release({ text: 'reply to a dead worker' });
    console.log(
      [
        `worker SIGKILL: workers polled ${firstStartupMs} ms / ${secondStartupMs} ms after spawn (first / second)`,
        `worker SIGKILL: after the kill, the retried model call arrived at ${retriedAfterMs} ms and the run SUCCEEDED at ${recoveredAfterMs} ms (heartbeat timeout 3 s)`,
      ].join('\n'),
    );

    expect(done.state).toBe('SUCCEEDED');
    // The agent's answer, nothing of the interruption.
    expect(Object.keys(done.status_message ?? {})).toEqual(['message']);

    // The model saw the prompt alone before the crash, and afterwards the follow-up once, after the prompt.
    const calls = ctx.model.calls(marker);
    expect(userMessages(calls[0]!.messages)).toEqual([prompt]);
    expect(calls).toHaveLength(2);
    expect(userMessages(calls[1]!.messages)).toEqual([prompt, followupMessage]);
    expect(calls[1]!.messages.filter((m) => m.role === 'assistant')).toEqual([]);
    expect(done.request_usage).toEqual({ total_tokens: 10 });

    const events = await transcript(ctx, runId);
    const followups = events.filter((e) => e.kind === 'followup');
    expect(followups).toHaveLength(1);
    expect(followups[0]!.payload.message).toBe(followupMessage);
    const kinds = events.map((e) => e.kind);
    expect(kinds.indexOf('prompt')).toBeLessThan(kinds.indexOf('followup'));
    expect(kinds.indexOf('followup')).toBeLessThan(kinds.indexOf('assistant'));
    expect(events.filter((e) => e.kind === 'assistant').map((e) => e.payload.text)).toEqual([`done (call 2)`]);
    // The transcript says that the step was resumed after its worker went away, once, before its reply.
    const resumed = events.filter((e) => e.kind === 'notice' && /was interrupted/.test(String(e.payload.message)));
    expect(resumed.map((e) => e.payload)).toEqual([
      { message: 'Step 1 of this turn was interrupted (its worker stopped); it runs again.' },
    ]);
    expect(kinds.indexOf('notice')).toBeLessThan(kinds.indexOf('assistant'));
    expect(events.filter((e) => e.kind === 'state').map((e) => e.payload.state)).toEqual([
      'QUEUED',
      'INPROGRESS',
      'SUCCEEDED',
    ]);
    const [{ undelivered }] = (await ctx.dataSource.query(
      `SELECT count(*)::int AS undelivered FROM followups WHERE run_id = $1 AND delivered_at IS NULL`,
      [runId],
    )) as [{ undelivered: number }];
    expect(undelivered).toBe(0);
  } finally {
    pollFailure = await history.stop();
  }
  if (pollFailure) throw pollFailure;

  // What clients saw never went backwards: states only move forward, updated_at never decreases.
  const seen = history.seen;
  expect(seen.length).toBeGreaterThan(1);
  expect(seen[seen.length - 1]!.state).toBe('SUCCEEDED');
  for (let i = 1; i < seen.length; i++) {
    const [before, after] = [seen[i - 1]!, seen[i]!];
    expect(RUN_STATES).toContain(after.state);
    expect(stateRank(after.state as RunState)).toBeGreaterThanOrEqual(stateRank(before.state as RunState));
    expect(Date.parse(after.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before.updatedAt));
  }
  const distinct = seen.map((s) => s.state).filter((s, i, all) => i === 0 || all[i - 1] !== s);
  expect(distinct).toContain('INPROGRESS');
  expect(['QUEUED', 'INPROGRESS', 'SUCCEEDED'].filter((s) => distinct.includes(s))).toEqual(distinct);
});

/** A worker process that can run Claude Code (the key reaches only its model gateway). */
function claudeWorker(): WorkerChild {
  const child = spawnWorkerProcess(ctx, { env: { ANTHROPIC_API_KEY: 'sk-ant-crash-test' } });
  workers.push(child);
  return child;
}

test('a worker SIGKILLed in the middle of a Claude Code turn: another worker resumes the session and the run finishes', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-crash');
  const held = gate<{ text: string }>();
  // Call 1 runs a command; call 2 is held (the worker dies in it); the resumed session then ends the turn.
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'Bash', arguments: { command: 'echo ran >> runs.log' } }] }
      : call === 2
        ? { hold: held.promise }
        : { text: 'finished after the resume' },
  );
  const first = claudeWorker();
  await waitUntilPolling(ctx, first, 'the first worker');
  const runId = await createRun(ctx, key, { prompt: `Run it once ${marker}`, config: { harness: { type: 'claude' } } });
  await within(ctx.model.waitForCalls(marker, 2), 60_000, 'the second model call', first);
  // The worker writes the CLI's entries as it reads them, and its read of the tool call can trail
  // the CLI's next model call on a loaded machine: the kill comes once that entry is recorded (one
  // a SIGKILL catches unwritten is lost; the resumed session does not print it again).
  await waitFor(
    async () => (await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call').length,
    (n) => n === 1,
    "the first attempt's tool call to be recorded",
  );
  first.proc.kill('SIGKILL');
  await first.exited;

  const second = claudeWorker();
  await waitUntilPolling(ctx, second, 'the second worker');
  const done = await within(
    waitForState(ctx, key, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'], undefined, 90_000),
    95_000,
    'the run to end on the second worker',
    second,
  );
  held.release({ text: 'reply to a dead worker' });
  // What happened, shown whole when the outcome is not the expected one.
  const story = (await transcript(ctx, runId)).map(
    (e) =>
      `${e.kind} ${JSON.stringify(e.payload.text ?? e.payload.message ?? e.payload.state ?? e.payload.name ?? '')}`,
  );
  expect({ state: done.state, status: done.status_message, calls: ctx.model.calls(marker).length, story }).toEqual({
    state: 'SUCCEEDED',
    status: { message: 'finished after the resume' },
    calls: 3,
    story: expect.arrayContaining(['assistant "finished after the resume"']),
  });

  // The command ran once; the resumed session still held it, and was told why it was resumed.
  expect(readFileSync(path.join(ctx.config.workspace.dir, runId, 'runs.log'), 'utf8')).toBe('ran\n');
  const calls = ctx.model.calls(marker);
  expect(calls).toHaveLength(3);
  const resumed = calls[2]!.messages.map((m) => m.content);
  expect(resumed[0]).toContain(`Run it once ${marker}`);
  expect(resumed.join('\n')).toContain('echo ran >> runs.log');
  expect(resumed.at(-1)).toContain('The previous attempt at this turn was interrupted');
  const events = await transcript(ctx, runId);
  expect(events.filter((e) => e.kind === 'notice').map((e) => e.payload.message)).toContainEqual(
    expect.stringMatching(/^Claude Code was interrupted \(its worker stopped\); attempt 2 resumes its session /),
  );
  expect(events.filter((e) => e.kind === 'tool_call')).toHaveLength(1);
});

test('what Claude Code printed while its worker could not read it is recorded when another worker resumes the turn', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('claude-unread');
  // What the command prints, which its own text (in the CLI's tool call entry) does not hold.
  const printed = `printed-42-${marker}`;
  // The command tells the test it runs, then waits for `go`: the worker is stopped in between, so
  // the CLI prints the command's result while nothing of the worker's can read it.
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            {
              name: 'Bash',
              arguments: {
                command: `touch running; while [ ! -e go ]; do sleep 0.05; done; echo ran >> runs.log; echo printed-$((6 * 7))-${marker}`,
              },
            },
          ],
        }
      : { text: 'finished after the resume' },
  );
  const first = claudeWorker();
  await waitUntilPolling(ctx, first, 'the first worker');
  const runId = await createRun(ctx, key, { prompt: `Run it once ${marker}`, config: { harness: { type: 'claude' } } });
  const workspace = path.join(ctx.config.workspace.dir, runId);
  await within(
    waitFor(
      async () => existsSync(path.join(workspace, 'running')),
      (running) => running,
      'the command to run',
      60_000,
    ),
    65_000,
    'the command to run',
    first,
  );
  first.proc.kill('SIGSTOP');
  writeFileSync(path.join(workspace, 'go'), '');
  // The CLI's output is on the worker's disk: the command's result reaches it with the worker stopped.
  const outputs = harnessOutputDir(ctx.config.workspace.dir, runId);
  await waitFor(
    async () =>
      existsSync(outputs)
        ? readdirSync(outputs)
            .map((name) => readFileSync(path.join(outputs, name), 'utf8'))
            .join('')
        : '',
    (text) => text.includes(printed),
    "the command's result in the CLI's output",
  );
  first.proc.kill('SIGKILL');
  await first.exited;
  expect((await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call')).toEqual([]);

  const second = claudeWorker();
  await waitUntilPolling(ctx, second, 'the second worker');
  const done = await within(
    waitForState(ctx, key, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'], undefined, 90_000),
    95_000,
    'the run to end on the second worker',
    second,
  );
  expect([done.state, done.status_message]).toEqual(['SUCCEEDED', { message: 'finished after the resume' }]);
  expect(readFileSync(path.join(workspace, 'runs.log'), 'utf8')).toBe('ran\n');
  // The interrupted attempt's tool call, recorded once from its output, before the resumed session's entries.
  const events = await transcript(ctx, runId);
  const toolCalls = events.filter((e) => e.kind === 'tool_call');
  expect(toolCalls).toHaveLength(1);
  expect(toolCalls[0]!.payload).toMatchObject({ name: 'Bash', is_error: false });
  expect(String(toolCalls[0]!.payload.output)).toContain(printed);
  const resumedNotice = events.findIndex(
    (e) => e.kind === 'notice' && String(e.payload.message).startsWith('Claude Code was interrupted'),
  );
  expect(resumedNotice).toBeGreaterThan(events.indexOf(toolCalls[0]!));
  // Its raw event stream too, and nothing of it is left on the worker's disk.
  const artifacts = (await getRun(ctx, key, runId)).artifacts as { data: { filename: string } }[];
  expect(artifacts.map((a) => a.data.filename)).toContain('claude-t1-s0-a1.jsonl');
  expect(readdirSync(outputs)).toEqual([]);
});

/** A run whose first step runs a command that blocks until the test creates `go` in the workspace. */
function blockingCommandScript(marker: string) {
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            {
              name: 'run_command',
              arguments: {
                command: `echo ran >> runs.count; touch started; exec -a ${marker} bash -c 'while [ ! -f go ]; do sleep 0.1; done; echo finished'`,
              },
            },
          ],
        }
      : { text: 'all done' },
  );
}

test('a worker SIGKILLed mid-tool-call: the command dies with it, a worker on the same host goes on in the same workspace without running it again, tells the model, and a follow-up sent meanwhile comes after the tool result', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('tool-crash');
  blockingCommandScript(marker);
  // Named by WORKER_ID, as a container whose host name changes on restart would be.
  const workerId = uniqueName('stable-worker');
  const first = spawnWorker(ctx, ctx.config.workspace.dir, workerId);
  await waitUntilPolling(ctx, first, 'the first worker');
  const runId = await createRun(ctx, key, { prompt: `Wait for go ${marker}` });
  const workspace = path.join(ctx.config.workspace.dir, runId);
  await waitFor(async () => existsSync(path.join(workspace, 'started')), Boolean, 'the command to start', 60_000);
  rmSync(path.join(workspace, 'started'));
  await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'sent mid-command' })
    .expect(200);
  first.proc.kill('SIGKILL');
  await first.exited;
  // Nothing the dead worker started keeps running: its sandbox died with it.
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the sandboxed command of the killed worker to be gone',
    10_000,
  );

  const second = spawnWorker(ctx, ctx.config.workspace.dir, workerId);
  await waitUntilPolling(ctx, second, 'the second worker');
  const done = await within(
    waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000),
    65_000,
    'the retried step',
    second,
  );
  expect(done.state).toBe('SUCCEEDED');
  // The model call of the interrupted step was not repeated, nor was its command: the model was
  // told that it was interrupted and its outcome is unknown.
  expect(readFileSync(path.join(workspace, 'runs.count'), 'utf8')).toBe('ran\n');
  expect(ctx.model.calls(marker)).toHaveLength(2);
  const tools = (await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call');
  expect(tools).toHaveLength(1);
  expect(tools[0]!.payload).toMatchObject({ interrupted: true, is_error: true });
  expect(ctx.model.calls(marker)[1]!.messages[2]!.content).toMatch(/interrupted.*outcome is unknown/);
  // The follow-up joined at the next step boundary, after the tool result, never between.
  expect(ctx.model.calls(marker)[1]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
  expect(ctx.model.calls(marker)[1]!.messages[3]!.content).toBe('sent mid-command');
  const notices = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'notice')
    .map((e) => String(e.payload.message));
  expect(notices.join('\n')).toContain(`workspaces@${workerId}`);
  expect(notices.join('\n')).not.toContain('is gone');
  await recordReplayFixture(ctx, runId, 'worker-killed-mid-command');
});

test('when the workspace worker does not come back, the run provisions afresh elsewhere and the transcript says so', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('tool-elsewhere');
  blockingCommandScript(marker);
  const first = spawnWorker(ctx);
  await waitUntilPolling(ctx, first, 'the first worker');
  const runId = await createRun(ctx, key, { prompt: `Wait for go ${marker}` });
  const oldWorkspace = path.join(ctx.config.workspace.dir, runId);
  await waitFor(async () => existsSync(path.join(oldWorkspace, 'started')), Boolean, 'the command to start', 60_000);
  first.proc.kill('SIGKILL');
  await first.exited;

  // Another machine: its own workspace directory, so its own workspace queue.
  const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-elsewhere-'));
  const second = spawnWorker(ctx, elsewhere);
  await waitUntilPolling(ctx, second, 'the worker elsewhere');
  const newWorkspace = path.join(elsewhere, runId);
  await within(
    waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 90_000),
    95_000,
    'the run to finish in the re-provisioned workspace',
    second,
  );
  // The interrupted command did not run again in the new workspace.
  expect(existsSync(newWorkspace)).toBe(true);
  expect(existsSync(path.join(newWorkspace, 'runs.count'))).toBe(false);
  const notices = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'notice')
    .map((e) => String(e.payload.message));
  expect(notices.some((m) => /is gone: provisioning a new workspace elsewhere/.test(m))).toBe(true);
  await recordReplayFixture(ctx, runId, 'reprovision-elsewhere');
});

test('a worker SIGKILLed while a foreman waits for its children: a new worker resumes the wait, no child starts twice, the foreman finishes', async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }, { type: 'IMPLEMENT' }]);
  const foreman = uniqueName('foreman-durable');
  const part = uniqueName('part');
  ctx.model.script(foreman, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `Part A ${part}` } },
            { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `Part B ${part}` } },
          ],
        }
      : call === 2
        ? { text: '', toolCalls: [{ name: 'wait_for_runs', arguments: {} }] }
        : { text: 'Both parts are in.' },
  );
  // The children's first calls die with the worker; their retries on the next worker answer.
  const never = gate<{ text: string }>();
  ctx.model.script(part, (_req, call) => (call <= 2 ? { hold: never.promise } : { text: 'Part done.' }));

  const first = spawnWorker(ctx);
  await waitUntilPolling(ctx, first, 'the first worker');
  const dispatched = await ctx.api
    .post(`/api/v1/agent/factories/${factory.uid}/runs`)
    .set(auth(key))
    .send({ prompt: `Two parts ${foreman}` });
  expect(dispatched.status).toBe(201);
  const parentId = (dispatched.body as { run_id: string }).run_id;
  await within(ctx.model.waitForCalls(part, 2), 60_000, 'both children to call the model', first);
  // The foreman waits once its wait_for_runs has read its children (a marker in its history).
  await within(
    waitFor(
      () => runHistory(ctx, parentId),
      (events) => events.some((e) => markerText(e).includes('childrenToWait')),
      'the foreman to wait',
    ),
    35_000,
    'the foreman to wait',
    first,
  );

  first.proc.kill('SIGKILL');
  expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
  // Same workspace directory, so the same WORKER_ID: it takes over the children's workspaces.
  const second = spawnWorker(ctx);
  await within(waitForState(ctx, key, parentId, ['SUCCEEDED'], undefined, 120_000), 125_000, 'the foreman', second);

  const children = await listRuns(ctx, key, `ancestor_run_id=${parentId}`);
  expect(children).toHaveLength(2);
  expect(children.map((c) => c.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
  const starts = (await runHistory(ctx, parentId)).filter(
    (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
  );
  expect(starts).toHaveLength(2);
  const waited = JSON.parse(toolResult(ctx.model.calls(foreman)[2]!, 'wait_for_runs')) as {
    runs: { state: string; message: string }[];
  };
  expect(waited.runs.map((r) => [r.state, r.message])).toEqual([
    ['SUCCEEDED', 'Part done.'],
    ['SUCCEEDED', 'Part done.'],
  ]);
  expect(ctx.model.calls(foreman)).toHaveLength(3);
});
