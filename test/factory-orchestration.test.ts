import { temporal } from '@temporalio/proto';
import { runWorkflowId } from '../workflows/run-contract';
import { createFactory, delegatingForeman, dispatch, history, listRuns, toolResult } from './helpers/factories';
import { hostPidsRunning } from './helpers/host-processes';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { auth, createRun, getRun, storedRun, transcript, waitForState, type RunBody } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { sessionLinkQuery, sessionPagePath } from './helpers/session-links';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

const EventType = temporal.api.enums.v1.EventType;

test('a foreman dispatches two agents and waits for both; one fails, and the foreman is told, not crashed', async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await createFactory(
    ctx,
    key,
    [
      { type: 'FOREMAN', prompt: 'You lead.' },
      { type: 'IMPLEMENT', description: 'writes the code' },
      { type: 'VERIFY', description: 'checks the code' },
    ],
    'Keep every answer short.',
  );
  const foreman = uniqueName('foreman');
  const implementer = uniqueName('implementer');
  const verifier = uniqueName('verifier');
  // The foreman's script first: a request that quotes a child's marker still belongs to it.
  ctx.model.script(
    foreman,
    delegatingForeman(
      [
        { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `Write the parser ${implementer}` } },
        { name: 'dispatch_agent', arguments: { agent: 'verify', prompt: `Check the parser ${verifier}` } },
      ],
      'The parser is written; verification failed.',
      'Splitting the work.',
    ),
  );
  ctx.model.script(implementer, () => ({ text: 'Parser written in parser.ts.' }));
  ctx.model.script(verifier, () => ({ status: 400, error: 'this verifier cannot work today' }));

  const res = await dispatch(ctx, key, factory.uid, { prompt: `Build a parser ${foreman}`, title: 'Parser' });
  expect(res.status).toBe(201);
  expect(res.headers.location).toBe(`/api/v1/agent/runs/${res.body.run_id}`);
  const parentId = (res.body as { run_id: string }).run_id;
  const parent = await waitForState(ctx, key, parentId, ['SUCCEEDED'], undefined, 60_000);

  // The run executes as the foreman, with the factory's instructions in its resolved config.
  expect(parent.factory_uid).toBe(factory.uid);
  expect((parent.executor as { uid: string }).uid).toBe(factory.agents.FOREMAN);
  expect((parent.agent_config as { base_prompt: string }).base_prompt).toMatch(
    /^You lead\.[\s\S]*Keep every answer short\./,
  );
  const firstRequest = ctx.model.calls(foreman)[0]!;
  expect(firstRequest.tools).toEqual(expect.arrayContaining(['dispatch_agent', 'wait_for_runs']));
  expect(firstRequest.system).toContain('(IMPLEMENT');
  expect(firstRequest.system).toContain('writes the code');
  // The factory-mcp skill is offered to a factory's agents (and only to them: see below).
  expect(firstRequest.system).toMatch(/^- factory-mcp: /m);

  // Two children: full runs with their own ids, dispatched as the right agents.
  const children = await listRuns(ctx, key, `ancestor_run_id=${parentId}&sort_by=created_at&sort_order=asc`);
  expect(children).toHaveLength(2);
  const [impl, verify] = children as [RunBody, RunBody];
  for (const child of children) {
    expect(child.parent_run_id).toBe(parentId);
    expect(child.source).toBe('ORCHESTRATION');
    expect(child.factory_uid).toBe(factory.uid);
  }
  expect((impl.executor as { uid: string }).uid).toBe(factory.agents.IMPLEMENT);
  expect((verify.executor as { uid: string }).uid).toBe(factory.agents.VERIFY);
  expect(impl.state).toBe('SUCCEEDED');
  expect(verify.state).toBe('FAILED');
  expect(ctx.model.calls(implementer)[0]!.tools).toContain('dispatch_agent');

  // The foreman learned both outcomes from wait_for_runs.
  const waited = JSON.parse(toolResult(ctx.model.calls(foreman)[2]!, 'wait_for_runs')) as {
    runs: { run_id: string; state: string; message: string }[];
    timed_out: boolean;
  };
  expect(waited.timed_out).toBe(false);
  expect(waited.runs.map((r) => [r.run_id, r.state])).toEqual([
    [impl.run_id, 'SUCCEEDED'],
    [verify.run_id, 'FAILED'],
  ]);
  expect(waited.runs[0]!.message).toBe('Parser written in parser.ts.');
  expect(waited.runs[1]!.message).toContain('this verifier cannot work today');
  const dispatched = JSON.parse(toolResult(ctx.model.calls(foreman)[1]!, 'dispatch_agent')) as { run_id: string };
  expect(dispatched.run_id).toBe(verify.run_id);

  // The audit log says the foreman's run created them, each as its agent.
  const created = (await ctx.dataSource.query(
    `SELECT resource_id, actor_type, actor_uid, details->>'agent_uid' AS agent FROM audit_events
      WHERE action = 'run.create' AND resource_id = ANY($1) ORDER BY seq`,
    [[impl.run_id, verify.run_id]],
  )) as { resource_id: string; actor_type: string; actor_uid: string; agent: string }[];
  expect(created.map((e) => [e.resource_id, e.actor_type, e.actor_uid, e.agent])).toEqual([
    [impl.run_id, 'service', `run:${parentId}`, factory.agents.IMPLEMENT],
    [verify.run_id, 'service', `run:${parentId}`, factory.agents.VERIFY],
  ]);

  // The factory filter finds the foreman's run and its children.
  const ofFactory = await listRuns(ctx, key, `factory_uid=${factory.uid}`);
  expect(ofFactory.map((r) => r.run_id).sort()).toEqual([parentId, impl.run_id, verify.run_id].sort());

  // The children are child workflows of the parent's workflow.
  const described = await ctx.client.workflow.getHandle(runWorkflowId(impl.run_id)).describe();
  expect(described.parentExecution?.workflowId).toBe(runWorkflowId(parentId));
  const parentHistory = await history(ctx, parentId);
  const startedChildren = parentHistory.filter(
    (e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
  );
  expect(startedChildren).toHaveLength(2);
  const byType = new Map<string, number>();
  for (const e of parentHistory) {
    const name = EventType[e.eventType!].replace('EVENT_TYPE_', '');
    byType.set(name, (byType.get(name) ?? 0) + 1);
  }
  console.log(
    `a foreman run with two children: ${parentHistory.length} history events in the parent: ${[...byType]
      .map(([t, n]) => `${t} ${n}`)
      .join(', ')}`,
  );

  // The parent's transcript page links each child's, signed to expire with the page's own link.
  const expires = new URL(String(parent.session_link)).searchParams.get('expires')!;
  const page = await ctx.api.get(sessionPagePath(parent.session_link));
  expect(page.status).toBe(200);
  for (const child of children) {
    const sessionId = (await getRun(ctx, key, child.run_id)).session_id as string;
    expect(page.text).toContain(
      `href="${sessionId}?${sessionLinkQuery(ctx, sessionId, Number(expires)).replace('&', '&amp;')}" data-child-run="${child.run_id}"`,
    );
  }
  await recordReplayFixture(ctx, parentId, 'factory-foreman-two-children');
  await recordReplayFixture(ctx, verify.run_id, 'factory-child-failed');
});

test('a follow-up to a dispatched run and to its child: each continues as any run does', async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }, { type: 'REVIEW' }]);
  const foreman = uniqueName('foreman-followup');
  const reviewer = uniqueName('reviewer-followup');
  ctx.model.script(foreman, (req, call) => {
    if (call === 1) {
      return {
        text: '',
        toolCalls: [{ name: 'dispatch_agent', arguments: { agent: 'REVIEW', prompt: `Review ${reviewer}` } }],
      };
    }
    if (call === 2) return { text: '', toolCalls: [{ name: 'wait_for_runs', arguments: { timeout_seconds: 120 } }] };
    const last = req.messages[req.messages.length - 1]!;
    return { text: last.role === 'user' ? `Answering: ${last.content}` : 'Reviewed.' };
  });
  ctx.model.script(reviewer, (req) => ({
    text: `Review round ${req.messages.filter((m) => m.role === 'user').length}`,
  }));
  const parentId = (await dispatch(ctx, key, factory.uid, { prompt: `Get a review ${foreman}` })).body.run_id as string;
  await waitForState(ctx, key, parentId, ['SUCCEEDED'], undefined, 60_000);
  const [child] = await listRuns(ctx, key, `ancestor_run_id=${parentId}`);

  const toParent = await ctx.api
    .post(`/api/v1/agent/runs/${parentId}/followups`)
    .set(auth(key))
    .send({ message: 'And the tests?' });
  expect(toParent.status).toBe(200);
  await waitFor(
    () => getRun(ctx, key, parentId),
    (run) =>
      run.state === 'SUCCEEDED' && (run.status_message as { message: string }).message === 'Answering: And the tests?',
    'the foreman to answer the follow-up',
  );

  const toChild = await ctx.api
    .post(`/api/v1/agent/runs/${child!.run_id}/followups`)
    .set(auth(key))
    .send({ message: 'Look again.' });
  expect(toChild.status).toBe(200);
  const again = await waitFor(
    () => getRun(ctx, key, child!.run_id),
    (run) => run.state === 'SUCCEEDED' && (run.status_message as { message: string }).message === 'Review round 2',
    'the child to answer its follow-up',
  );
  expect(again.parent_run_id).toBe(parentId);
  // Nothing of the child's second turn was dispatched again.
  expect(await listRuns(ctx, key, `ancestor_run_id=${parentId}`)).toHaveLength(1);
});

test('cancelling a foreman while its child runs `sleep 600`: both CANCELLED within seconds, the process gone', async () => {
  const { key, uid } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }, { type: 'IMPLEMENT' }]);
  const foreman = uniqueName('foreman-cancel');
  const sleeper = uniqueName('sleeper');
  ctx.model.script(foreman, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [{ name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `Sleep ${sleeper}` } }],
        }
      : { text: '', toolCalls: [{ name: 'wait_for_runs', arguments: {} }] },
  );
  ctx.model.script(sleeper, () => ({
    text: '',
    toolCalls: [{ name: 'run_command', arguments: { command: `exec -a ${sleeper} sleep 600` } }],
  }));
  const parentId = (await dispatch(ctx, key, factory.uid, { prompt: `Sleep on it ${foreman}` })).body.run_id as string;
  await waitFor(
    async () => hostPidsRunning(sleeper).length,
    (n) => n === 1,
    'the child to start sleep 600',
    60_000,
  );
  await ctx.model.waitForCalls(foreman, 2);
  const [child] = await listRuns(ctx, key, `ancestor_run_id=${parentId}`);

  const cancelledAt = Date.now();
  expect((await ctx.api.post(`/api/v1/agent/runs/${parentId}/cancel`).set(auth(key))).status).toBe(200);
  const childRun = await waitForState(ctx, key, child!.run_id, ['CANCELLED'], undefined, 15_000);
  const childCancelledAfter = Date.now() - cancelledAt;
  await waitFor(
    async () => hostPidsRunning(sleeper).length,
    (n) => n === 0,
    'the sleep to be killed',
    10_000,
  );
  const parentRun = await waitForState(ctx, key, parentId, ['CANCELLED'], undefined, 15_000);
  console.log(`cancel of a foreman → its child CANCELLED in ${childCancelledAfter} ms`);
  expect((parentRun.status_message as { message: string }).message).toContain(uid);
  expect((childRun.status_message as { message: string }).message).toContain(`ancestor run ${parentId}`);
  await recordReplayFixture(ctx, parentId, 'factory-foreman-cancelled');
});

test('a grandchild: ancestor_run_id lists every descendant of a run and only those; cancelling the root ends all three', async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }, { type: 'IMPLEMENT' }, { type: 'REVIEW' }]);
  const foreman = uniqueName('foreman-tree');
  const middle = uniqueName('middle');
  const bottom = uniqueName('bottom');
  // In this order: a request that quotes a lower level's marker belongs to the upper level.
  ctx.model.script(foreman, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [{ name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `Delegate ${middle}` } }],
        }
      : { text: '', toolCalls: [{ name: 'wait_for_runs', arguments: {} }] },
  );
  ctx.model.script(middle, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'dispatch_agent', arguments: { agent: 'REVIEW', prompt: `Sleep ${bottom}` } }] }
      : { text: '', toolCalls: [{ name: 'wait_for_runs', arguments: {} }] },
  );
  ctx.model.script(bottom, () => ({
    text: '',
    toolCalls: [{ name: 'run_command', arguments: { command: `exec -a ${bottom} sleep 600` } }],
  }));
  // Runs outside the tree: a plain run of the team, and another tree's root.
  const plain = uniqueName('plain-tree');
  ctx.model.script(plain, () => ({ text: 'hi' }));
  const unrelated = await createRun(ctx, key, { prompt: `hello ${plain}` });
  const otherRoot = uniqueName('other-root');
  ctx.model.script(otherRoot, () => ({ text: 'nothing to delegate' }));
  const otherRootId = (await dispatch(ctx, key, factory.uid, { prompt: `Alone ${otherRoot}` })).body.run_id as string;

  const rootId = (await dispatch(ctx, key, factory.uid, { prompt: `Three levels ${foreman}` })).body.run_id as string;
  await waitFor(
    async () => hostPidsRunning(bottom).length,
    (n) => n === 1,
    'the grandchild to start sleep 600',
    60_000,
  );
  await ctx.model.waitForCalls(foreman, 2);
  await ctx.model.waitForCalls(middle, 2);
  await waitForState(ctx, key, unrelated, ['SUCCEEDED']);
  await waitForState(ctx, key, otherRootId, ['SUCCEEDED']);

  const belowRoot = await listRuns(ctx, key, `ancestor_run_id=${rootId}&sort_by=created_at&sort_order=asc`);
  expect(belowRoot).toHaveLength(2);
  const [child, grandchild] = belowRoot as [RunBody, RunBody];
  expect(child.parent_run_id).toBe(rootId);
  expect((child.executor as { uid: string }).uid).toBe(factory.agents.IMPLEMENT);
  expect(grandchild.parent_run_id).toBe(child.run_id);
  // Every run of the tree names its top.
  expect(child.root_run_id).toBe(rootId);
  expect(grandchild.root_run_id).toBe(rootId);
  expect((grandchild.executor as { uid: string }).uid).toBe(factory.agents.REVIEW);
  expect(grandchild).toMatchObject({ source: 'ORCHESTRATION', factory_uid: factory.uid, state: 'INPROGRESS' });
  expect((await listRuns(ctx, key, `ancestor_run_id=${child.run_id}`)).map((r) => r.run_id)).toEqual([
    grandchild.run_id,
  ]);
  expect(await listRuns(ctx, key, `ancestor_run_id=${grandchild.run_id}`)).toEqual([]);
  expect(await listRuns(ctx, key, `ancestor_run_id=${otherRootId}`)).toEqual([]);
  // With another filter, and paged one at a time: still exactly the descendants.
  expect((await listRuns(ctx, key, `ancestor_run_id=${rootId}&state=INPROGRESS`)).map((r) => r.run_id).sort()).toEqual(
    [child.run_id, grandchild.run_id].sort(),
  );
  const firstPage = await ctx.api.get(`/api/v1/agent/runs?ancestor_run_id=${rootId}&limit=1`).set(auth(key));
  const secondPage = await ctx.api
    .get(`/api/v1/agent/runs?ancestor_run_id=${rootId}&limit=1&cursor=${firstPage.body.page_info.next_cursor}`)
    .set(auth(key));
  expect([...firstPage.body.runs, ...secondPage.body.runs].map((r: RunBody) => r.run_id).sort()).toEqual(
    [child.run_id, grandchild.run_id].sort(),
  );
  expect(secondPage.body.page_info.has_next_page).toBe(false);

  expect((await ctx.api.post(`/api/v1/agent/runs/${rootId}/cancel`).set(auth(key))).status).toBe(200);
  const ended = await Promise.all(
    [grandchild.run_id, child.run_id, rootId].map((id) => waitForState(ctx, key, id, ['CANCELLED'], undefined, 15_000)),
  );
  await waitFor(
    async () => hostPidsRunning(bottom).length,
    (n) => n === 0,
    'the grandchild sleep to be killed',
    10_000,
  );
  expect((ended[0]!.status_message as { message: string }).message).toContain(rootId);
  // Nothing outside the tree was touched.
  expect((await getRun(ctx, key, unrelated)).state).toBe('SUCCEEDED');
  expect((await getRun(ctx, key, otherRootId)).state).toBe('SUCCEEDED');
});

test('dispatching: another team, a missing factory and a factory without a foreman are refused and change nothing', async () => {
  const { key } = await ctx.newTeamKey();
  const { key: otherKey } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }]);
  const leaderless = await createFactory(ctx, key, [{ type: 'REVIEW' }]);
  const before = (await listRuns(ctx, key, '')).map(storedRun);

  const foreign = await dispatch(ctx, otherKey, factory.uid, { prompt: 'Take it over' });
  expect(foreign.status).toBe(404);
  expect(foreign.body.detail).toContain(factory.uid);
  expect((await dispatch(ctx, key, 'fac_missing', { prompt: 'x' })).status).toBe(404);
  const noForeman = await dispatch(ctx, key, leaderless.uid, { prompt: 'Lead yourselves' });
  expect(noForeman.status).toBe(400);
  expect(noForeman.body.detail).toMatch(/no FOREMAN agent[\s\S]*\(REVIEW\)/);
  const empty = await dispatch(ctx, key, factory.uid, { prompt: '  ' });
  expect(empty.status).toBe(400);
  expect(empty.body.detail).toContain('prompt');
  const extra = await dispatch(ctx, key, factory.uid, { prompt: 'x', config: { model_id: 'openai/x' } });
  expect(extra.status).toBe(400);
  expect((await listRuns(ctx, key, '')).map(storedRun)).toEqual(before);

  // Lineage filters stay in the team.
  const plain = uniqueName('plain');
  ctx.model.script(plain, () => ({ text: 'hi' }));
  const run = (
    await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: `hello ${plain}` })
  ).body.run_id as string;
  await waitForState(ctx, key, run, ['SUCCEEDED']);
  // A run outside any factory has neither the orchestration tools nor the skill that teaches them.
  expect(ctx.model.calls(plain)[0]!.tools).not.toContain('dispatch_agent');
  expect(ctx.model.calls(plain)[0]!.system).not.toContain('factory-mcp');
  const foreignAncestor = await ctx.api.get(`/api/v1/agent/runs?ancestor_run_id=${run}`).set(auth(otherKey));
  expect(foreignAncestor.status).toBe(400);
  expect(foreignAncestor.body.detail).toContain('ancestor_run_id');
  expect(await listRuns(ctx, otherKey, `factory_uid=${factory.uid}`)).toEqual([]);
});

describe('bounds of the tree', () => {
  let limited: TestContext;
  beforeAll(async () => {
    limited = await createTestContext({
      env: { ORCHESTRATION_MAX_DEPTH: '1', ORCHESTRATION_MAX_CHILDREN_PER_RUN: '1' },
    });
  });
  afterAll(async () => {
    await limited?.close();
  });

  test('a second child and a grandchild are refused with tool errors the agent can act on', async () => {
    const { key } = await limited.newTeamKey();
    const factory = await createFactory(limited, key, [{ type: 'FOREMAN' }, { type: 'IMPLEMENT' }]);
    const foreman = uniqueName('foreman-bounds');
    const child = uniqueName('child-bounds');
    const grandchild = uniqueName('grandchild');
    limited.model.script(foreman, (_req, call) =>
      call === 1
        ? {
            text: '',
            toolCalls: [
              { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `One ${child}` } },
              { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: 'Two' } },
              { name: 'dispatch_agent', arguments: { agent: 'nobody', prompt: 'Three' } },
            ],
          }
        : call === 2
          ? { text: '', toolCalls: [{ name: 'wait_for_runs', arguments: { run_ids: ['not-a-child'] } }] }
          : { text: 'done' },
    );
    limited.model.script(child, (_req, call) =>
      call === 1
        ? {
            text: '',
            toolCalls: [{ name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `Deeper ${grandchild}` } }],
          }
        : { text: 'did it myself' },
    );
    const parentId = (await dispatch(limited, key, factory.uid, { prompt: `Bounded ${foreman}` })).body
      .run_id as string;
    await waitForState(limited, key, parentId, ['SUCCEEDED'], undefined, 60_000);
    const children = await listRuns(limited, key, `ancestor_run_id=${parentId}`);
    expect(children).toHaveLength(1);
    const childId = children[0]!.run_id;
    await waitForState(limited, key, childId, ['SUCCEEDED']);
    expect(limited.model.calls(grandchild)).toHaveLength(0);

    const results = (await transcript(limited, parentId)).filter((e) => e.kind === 'tool_call').map((e) => e.payload);
    expect(results.map((r) => [r.name, r.is_error])).toEqual([
      ['dispatch_agent', false],
      ['dispatch_agent', true],
      ['dispatch_agent', true],
      ['wait_for_runs', true],
    ]);
    expect(results[1]!.output).toContain('ORCHESTRATION_MAX_CHILDREN_PER_RUN');
    expect(results[2]!.output).toMatch(/no agent "nobody"[\s\S]*\(IMPLEMENT\)/);
    expect(results[3]!.output).toContain('not-a-child');
    const childResults = (await transcript(limited, childId)).filter((e) => e.kind === 'tool_call');
    expect(childResults[0]!.payload.is_error).toBe(true);
    expect(childResults[0]!.payload.output).toContain('ORCHESTRATION_MAX_DEPTH');

    // The API's parent_run_id obeys the same bounds.
    const deeper = await limited.api
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: 'below the child', parent_run_id: childId });
    expect(deeper.status).toBe(400);
    expect(deeper.body.detail).toContain('ORCHESTRATION_MAX_DEPTH');
  });
});
