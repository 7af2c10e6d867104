import { PLAN_APPROVED_NOTE, PLAN_MODE_NOTE } from '../activities/agent-step-activities';
import { auth, createRun, getRun, transcript, waitForState, type RunBody } from './helpers/runs';
import type { ChatRequest } from './helpers/scripted-model';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { warpClientCalls } from './helpers/warp-client';
import { WebhookReceiver } from './helpers/webhook-receiver';

/**
 * Plan mode: a turn in `mode: "plan"` may read but not change anything, ends with a `PLAN`
 * artifact (submit_plan, or its final answer), and a follow-up carries the plan out with the plan
 * in the model's context, or revises it as the next version of the same document.
 */

let ctx: TestContext;
let key: string;
const receiver = new WebhookReceiver();
beforeAll(async () => {
  ctx = await createTestContext({ env: { OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1' } });
  ({ key } = await ctx.newTeamKey('personal', undefined, 'admin'));
  const hook = await ctx.api
    .post('/api/v1/agent/webhooks')
    .set(auth(key))
    .send({ url: await receiver.start() });
  expect(hook.status).toBe(201);
});
afterAll(async () => {
  await receiver.stop();
  await ctx?.close();
});

jest.setTimeout(240_000);

interface PlanItem {
  artifact_type: 'PLAN';
  created_at: string;
  data: { document_uid: string; artifact_uid: string; notebook_uid: string; title: string; version: number };
}

const plans = (run: RunBody) =>
  ((run.artifacts ?? []) as { artifact_type: string }[]).filter((a): a is PlanItem => a.artifact_type === 'PLAN');

const lastUserMessage = (req: ChatRequest) => req.messages.filter((m) => m.role === 'user').at(-1)!.content;
/** The arguments of the submit_plan calls in the conversation the model was sent (OpenAI's shape). */
const submittedPlans = (req: ChatRequest) =>
  req.messages
    .flatMap((m) => (m.tool_calls ?? []) as { function: { name: string; arguments: string } }[])
    .filter((c) => c.function.name === 'submit_plan')
    .map((c) => JSON.parse(c.function.arguments) as unknown);
const toolResults = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool').map((m) => m.content);

async function followup(runId: string, body: Record<string, unknown>) {
  const res = await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send(body);
  expect(res.status).toBe(200);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
}

const READ_TOOLS = ['ask_user', 'list_directory', 'read_file', 'read_skill', 'submit_plan'];
const PLAN_MARKDOWN = '# Add a greeting\n\n1. Write `hello.txt` saying hello.\n2. Check it with `cat`.';

test('plan mode refuses a write, submit_plan ends the turn with a PLAN artifact; "go" carries the plan out', async () => {
  const marker = uniqueName('plan-go');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1) {
      return {
        text: '',
        toolCalls: [
          { name: 'write_file', arguments: { path: 'sneaky.txt', content: 'written in plan mode' } },
          { name: 'run_command', arguments: { command: 'touch sneaky-command.txt' } },
          { name: 'list_directory', arguments: {} },
        ],
      };
    }
    if (call === 2) {
      return {
        text: '',
        toolCalls: [{ name: 'submit_plan', arguments: { title: 'Add a greeting', markdown: PLAN_MARKDOWN } }],
      };
    }
    if (call === 3) return { text: '', toolCalls: [{ name: 'list_directory', arguments: {} }] };
    if (call === 4) {
      return { text: '', toolCalls: [{ name: 'write_file', arguments: { path: 'hello.txt', content: 'hello' } }] };
    }
    return { text: `done ${marker}` };
  });
  const runId = await createRun(ctx, key, { prompt: `Plan a greeting ${marker}`, mode: 'plan' });
  const ended = await waitForState(ctx, key, runId, ['SUCCEEDED']);

  // The model was offered only the tools that read, and submit_plan; the write and the command were refused.
  const [first, second] = ctx.model.calls(marker);
  expect(first!.tools.sort()).toEqual(READ_TOOLS);
  expect(first!.messages[0]!.content).toBe(`${PLAN_MODE_NOTE}\n\nPlan a greeting ${marker}`);
  const [wrote, ran, listed] = toolResults(second!);
  expect(wrote).toMatch(/^Refused in plan mode: write_file/);
  expect(ran).toMatch(/^Refused in plan mode: run_command/);
  expect(listed).not.toContain('sneaky');
  // submit_plan ended the turn: no third model call in it.
  expect(ctx.model.calls(marker)).toHaveLength(2);

  const [plan] = plans(ended);
  expect(plans(ended)).toHaveLength(1);
  expect(plan!.data).toMatchObject({ title: 'Add a greeting', version: 1 });
  expect(plan!.data.notebook_uid).toBe(plan!.data.document_uid);
  expect((ended.status_message as { message: string }).message).toBe(
    `Plan "Add a greeting" (version 1) awaits approval: send a follow-up to carry it out, or one in plan mode to revise it. The plan: GET /api/v1/agent/artifacts/${plan!.data.artifact_uid}.`,
  );
  const artifact = await ctx.api.get(`/api/v1/agent/artifacts/${plan!.data.artifact_uid}`).set(auth(key));
  expect(artifact.status).toBe(200);
  expect(artifact.body).toEqual({
    artifact_type: 'PLAN',
    artifact_uid: plan!.data.artifact_uid,
    created_at: plan!.created_at,
    data: {
      content: PLAN_MARKDOWN,
      content_type: 'text/markdown',
      document_uid: plan!.data.document_uid,
      notebook_uid: plan!.data.document_uid,
      title: 'Add a greeting',
      version: 1,
    },
  });
  const other = await ctx.newTeamKey();
  expect((await ctx.api.get(`/api/v1/agent/artifacts/${plan!.data.artifact_uid}`).set(auth(other.key))).status).toBe(
    404,
  );
  const listed2 = await ctx.api.get('/api/v1/agent/runs').query({ artifact_type: 'PLAN' }).set(auth(key));
  expect((listed2.body.runs as RunBody[]).map((r) => r.run_id)).toContain(runId);
  const files = await ctx.api.get('/api/v1/agent/runs').query({ artifact_type: 'FILE' }).set(auth(key));
  expect((files.body.runs as RunBody[]).map((r) => r.run_id)).not.toContain(runId);
  // The webhook of the state change carries the plan among the run's artifacts.
  const planOf = (body: string) => {
    const { data } = JSON.parse(body) as { data: RunBody };
    return data.run_id === runId && data.state === 'SUCCEEDED' ? plans(data) : [];
  };
  await receiver.until((got) => got.some((r) => planOf(r.body).length > 0), 'the webhook of the plan');
  expect(receiver.requests.flatMap((r) => planOf(r.body))).toEqual([plan]);
  // The submit_plan call's transcript entry names the artifact, as an upload's does.
  const submitted = (await transcript(ctx, runId)).find(
    (e) => e.kind === 'tool_call' && e.payload.name === 'submit_plan',
  );
  expect(submitted?.payload).toMatchObject({ is_error: false, artifact_uid: plan!.data.artifact_uid });

  // "go": the next turn is told that the plan may be carried out, with the plan in its context.
  await followup(runId, { message: 'go' });
  const calls = ctx.model.calls(marker);
  const goRequest = calls[2]!;
  expect(lastUserMessage(goRequest)).toBe(`${PLAN_APPROVED_NOTE}\n\ngo`);
  expect(submittedPlans(goRequest)).toEqual([{ title: 'Add a greeting', markdown: PLAN_MARKDOWN }]);
  expect(goRequest.tools).toEqual(expect.arrayContaining(['write_file', 'run_command']));
  expect(goRequest.tools).not.toContain('submit_plan');
  // Nothing was written in plan mode; now the write runs.
  expect(toolResults(calls[3]!).at(-1)).not.toContain('sneaky');
  expect(toolResults(calls[4]!).at(-1)).toBe('Wrote 5 bytes to hello.txt.');
  const done = await getRun(ctx, key, runId);
  expect((done.status_message as { message: string }).message).toBe(`done ${marker}`);
  expect(plans(done)).toHaveLength(1);
});

test('a plan-mode answer is the plan; a follow-up in plan mode revises it: same document, next version; clients read it strictly', async () => {
  const marker = uniqueName('plan-revise');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '# Rename the module\n\nRename it.' }
      : {
          text: '',
          toolCalls: [
            {
              name: 'submit_plan',
              arguments: { title: 'Rename the module, in two steps', markdown: '1. Rename.\n2. Fix imports.' },
            },
          ],
        },
  );
  const runId = await createRun(ctx, key, { prompt: `Plan a rename ${marker}`, mode: 'plan' });
  const first = plans(await waitForState(ctx, key, runId, ['SUCCEEDED']));
  expect(first.map((p) => [p.data.title, p.data.version])).toEqual([['Rename the module', 1]]);

  await followup(runId, { message: 'Make it two steps.', mode: 'plan' });
  expect(lastUserMessage(ctx.model.calls(marker)[1]!)).toBe(`${PLAN_MODE_NOTE}\n\nMake it two steps.`);
  const run = await getRun(ctx, key, runId);
  const both = plans(run);
  expect(both.map((p) => [p.data.title, p.data.version])).toEqual([
    ['Rename the module', 1],
    ['Rename the module, in two steps', 2],
  ]);
  expect(both[1]!.data.document_uid).toBe(both[0]!.data.document_uid);
  expect(both[1]!.data.artifact_uid).not.toBe(both[0]!.data.artifact_uid);
  expect((run.status_message as { message: string }).message).toContain('(version 2) awaits approval');
  const v1 = await ctx.api.get(`/api/v1/agent/artifacts/${both[0]!.data.artifact_uid}`).set(auth(key));
  expect(v1.body.data.content).toBe('# Rename the module\n\nRename it.');

  const calls = [
    { call: 'agent.runs.retrieve', args: [runId] },
    { call: 'agent.get_artifact', args: [both[1]!.data.artifact_uid] },
    { call: 'agent.runs.list', kwargs: { artifact_type: 'PLAN' } },
  ];
  for (const client of ['newest', 'oz'] as const) {
    const [read, artifact, listed] = await warpClientCalls(ctx.baseUrl, key, calls, client);
    expect(read).toMatchObject({
      ok: {
        state: 'SUCCEEDED',
        artifacts: [
          { artifact_type: 'PLAN', data: { document_uid: both[0]!.data.document_uid } },
          { artifact_type: 'PLAN', data: { artifact_uid: both[1]!.data.artifact_uid } },
        ],
      },
    });
    expect(artifact).toMatchObject({
      ok: { artifact_type: 'PLAN', data: { content: '1. Rename.\n2. Fix imports.', content_type: 'text/markdown' } },
    });
    expect((listed as { ok: { run_id: string }[] }).ok.map((r) => r.run_id)).toContain(runId);
  }
});
