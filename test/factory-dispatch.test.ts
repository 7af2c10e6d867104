import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { MAX_ATTACHMENT_BYTES } from '../core/attachments';
import { MAX_BODY_BYTES, MAX_BODY_WITH_ATTACHMENTS_BYTES } from '../api/middleware/json-body';
import { createEnvironment } from './helpers/environments';
import { withdrawUnstartedRun } from '../db/run-creation';
import { runWorkflowId } from '../workflows/run-contract';
import { createFactory, delegatingForeman, dispatch, listRuns, toolResult } from './helpers/factories';
import { createGitHost } from './helpers/git-fixtures';
import { auth, createRun, waitForState, type RunBody } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * `POST /agent/factories/{uid}/runs` end to end: what the foreman's run is resolved to (the
 * factory's environment, the foreman's model, skills and MCP servers), what its children get, a
 * factory found in a repository's FACTORY.md, and attachments on a dispatch.
 */

const YARD_README = 'Yard repository: the API factory works here.';
const ANNEX_README = 'Annex repository: somewhere else.';
const PLANT_README = 'Plant repository: home of the plant crew.';
const PLANT_CREW = `---
name: plant-crew
description: Tends the plant
agents:
  - name: lead
    agent_type: FOREMAN
    prompt: You lead the plant crew.
    base_model: openai/lead-model
    skills: [acme/tools:lint]
  - name: gardener
    agent_type: IMPLEMENT
    description: Waters the plants
---

Water before noon.
`;

const git = createGitHost();
git.addRepo('acme', 'yard', { 'README.md': `${YARD_README}\n` });
git.addRepo('acme', 'annex', { 'README.md': `${ANNEX_README}\n` });
git.addRepo('acme', 'plant', {
  'README.md': `${PLANT_README}\n`,
  '.agents/factories/plant-crew/FACTORY.md': PLANT_CREW,
});
git.addRepo('acme', 'tools', {
  '.claude/skills/lint/SKILL.md':
    '---\nname: lint\ndescription: Lint the code\n---\nRun the linter with --fix first.\n',
  '.agents/skills/format/SKILL.md': '---\nname: format\ndescription: Format the code\n---\nRun the formatter.\n',
});

const REPO_ROOT = path.resolve(__dirname, '..');

/** The stdio MCP fixture, with `env` so that a run can tell which definition of the server it got. */
function calcServer(env: Record<string, string>) {
  return {
    command: process.execPath,
    args: [
      '--import',
      pathToFileURL(path.join(REPO_ROOT, 'node_modules/tsx/dist/loader.mjs')).href,
      path.join(REPO_ROOT, 'test/fixtures/mcp-stdio-server.ts'),
    ],
    env,
  };
}

let ctx: TestContext;
beforeAll(async () => {
  // The stdio MCP fixture runs from this repository with tsx, which the sandbox shows only when told to.
  ctx = await createTestContext({
    env: {
      GIT_BASE_URL: git.baseUrl,
      AGENT_SANDBOX_READONLY_PATHS: `${path.join(REPO_ROOT, 'node_modules')},${path.join(REPO_ROOT, 'test/fixtures')}`,
    },
  });
});
afterAll(async () => {
  await ctx?.close();
});

type AgentConfig = {
  environment_id?: string;
  model_id: string;
  skills?: string[];
  mcp_servers?: Record<string, unknown>;
  base_prompt?: string;
};
const configOf = (run: RunBody) => run.agent_config as AgentConfig;

async function post(key: string, url: string, body: Record<string, unknown>): Promise<{ uid: string }> {
  const res = await ctx.api.post(url).set(auth(key)).send(body);
  if (res.status !== 201) throw new Error(`${url}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { uid: string };
}

/**
 * A factory in the yard environment: a foreman with its own model, skill and MCP server, an
 * IMPLEMENT agent that sets nothing, and a REVIEW agent that names the annex environment.
 */
async function yardFactory(key: string) {
  const yardEnv = await createEnvironment(ctx, key, { name: 'yard', github_repos: [{ owner: 'acme', repo: 'yard' }] });
  const annexEnv = await createEnvironment(ctx, key, {
    name: 'annex',
    github_repos: [{ owner: 'acme', repo: 'annex' }],
  });
  const factory = await post(key, '/api/v1/agent/factories', {
    name: uniqueName('yard-factory'),
    environment_id: yardEnv,
  });
  const agent = (fields: Record<string, unknown>) =>
    post(key, '/api/v1/agent/identities', { name: uniqueName('agent'), factory_uid: factory.uid, ...fields });
  const foreman = await agent({
    agent_type: 'FOREMAN',
    prompt: 'You lead the yard.',
    base_model: 'openai/foreman-model',
    skills: ['acme/tools:lint'],
    mcp_servers: { calc: calcServer({ IDENTITY_FLAG: 'on' }) },
  });
  const implementer = await agent({ agent_type: 'IMPLEMENT' });
  const reviewer = await agent({ agent_type: 'REVIEW', environment_id: annexEnv });
  return {
    yardEnv,
    annexEnv,
    factory: factory.uid,
    foreman: foreman.uid,
    implementer: implementer.uid,
    reviewer: reviewer.uid,
  };
}

/** A child's script: shows the workspace's repository READMEs, then answers. */
function readsReadmes(marker: string) {
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'cat */README.md' } }] }
      : { text: `read ${marker}` },
  );
}

test("dispatch: the foreman's run gets the factory's environment and the foreman's model, skills and MCP servers; its children work in the factory's environment unless theirs names another", async () => {
  const { key } = await ctx.newTeamKey();
  const yard = await yardFactory(key);
  const foreman = uniqueName('yard-foreman');
  const implementer = uniqueName('yard-implementer');
  const reviewer = uniqueName('yard-reviewer');
  ctx.model.script(
    foreman,
    delegatingForeman(
      [
        { name: 'run_command', arguments: { command: 'cat */README.md' } },
        { name: 'mcp__calc__add', arguments: { a: 2, b: 3 } },
        { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `Read ${implementer}` } },
        { name: 'dispatch_agent', arguments: { agent: 'REVIEW', prompt: `Read ${reviewer}` } },
      ],
      'The yard is read.',
    ),
  );
  readsReadmes(implementer);
  readsReadmes(reviewer);

  const res = await dispatch(ctx, key, yard.factory, { prompt: `Read the yard ${foreman}` });
  expect(res.status).toBe(201);
  const parentId = res.body.run_id as string;
  const parent = await waitForState(ctx, key, parentId, ['SUCCEEDED'], undefined, 90_000);

  // Resolved into agent_config, as recorded on the run.
  expect(configOf(parent)).toMatchObject({
    environment_id: yard.yardEnv,
    model_id: 'openai/foreman-model',
    skills: ['acme/tools:lint'],
    base_prompt: 'You lead the yard.',
  });
  expect(Object.keys(configOf(parent).mcp_servers ?? {})).toEqual(['calc']);
  // ... and used: the model asked is the foreman's, the skill is advertised, the MCP server
  // answers, and the workspace is the yard environment's.
  const [first, second] = ctx.model.calls(foreman);
  expect(first!.model).toBe('foreman-model');
  expect(first!.system).toContain('- lint: Lint the code');
  expect(first!.tools).toEqual(expect.arrayContaining(['mcp__calc__add', 'dispatch_agent', 'wait_for_runs']));
  expect(toolResult(second!, 'mcp__calc__add')).toBe('5');
  expect(toolResult(second!, 'run_command')).toContain(YARD_README);
  expect(toolResult(second!, 'run_command')).not.toContain(ANNEX_README);

  // Children: the factory's environment is where a factory works, so a child whose agent names
  // no environment gets it too; an agent that names its own works there. Neither inherits the
  // foreman's model, skills or MCP servers: those are the foreman's, not the factory's.
  const children = await listRuns(ctx, key, `ancestor_run_id=${parentId}&sort_by=created_at&sort_order=asc`);
  expect(children.map((c) => (c.executor as { uid: string }).uid)).toEqual([yard.implementer, yard.reviewer]);
  const [impl, review] = children as [RunBody, RunBody];
  expect(configOf(impl)).toMatchObject({ environment_id: yard.yardEnv, model_id: 'openai/test-model' });
  expect(configOf(review)).toMatchObject({ environment_id: yard.annexEnv, model_id: 'openai/test-model' });
  for (const child of children) {
    expect(child.state).toBe('SUCCEEDED');
    expect(configOf(child).skills).toBeUndefined();
    expect(configOf(child).mcp_servers).toBeUndefined();
  }
  expect(toolResult(ctx.model.calls(implementer)[1]!, 'run_command')).toContain(YARD_README);
  const reviewed = toolResult(ctx.model.calls(reviewer)[1]!, 'run_command');
  expect(reviewed).toContain(ANNEX_README);
  expect(reviewed).not.toContain(YARD_README);
  expect(ctx.model.calls(implementer)[0]!.tools).not.toContain('mcp__calc__add');
});

test("a run of the foreman through POST /agent/runs: the request's config wins over the foreman's, field by field", async () => {
  const { key } = await ctx.newTeamKey();
  const yard = await yardFactory(key);
  const marker = uniqueName('request-wins');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'run_command', arguments: { command: 'cat */README.md' } },
            { name: 'mcp__calc__env_keys', arguments: {} },
          ],
        }
      : { text: 'done' },
  );
  const runId = await createRun(ctx, key, {
    prompt: `Work elsewhere ${marker}`,
    agent_identity_uid: yard.foreman,
    config: {
      model_id: 'openai/request-model',
      environment_id: yard.annexEnv,
      base_prompt: 'The request says how.',
      skills: ['acme/tools:format'],
      mcp_servers: { calc: calcServer({ REQUEST_FLAG: 'on' }) },
    },
  });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 90_000);
  expect(run.factory_uid).toBe(yard.factory);
  expect(configOf(run)).toMatchObject({
    model_id: 'openai/request-model',
    environment_id: yard.annexEnv,
    base_prompt: 'The request says how.',
    // Skills add up: the foreman's first, then the request's.
    skills: ['acme/tools:lint', 'acme/tools:format'],
  });
  const [first, second] = ctx.model.calls(marker);
  expect(first!.model).toBe('request-model');
  expect(first!.system).toContain('The request says how.');
  expect(first!.system).not.toContain('You lead the yard.');
  expect(first!.system).toContain('- lint: Lint the code');
  expect(first!.system).toContain('- format: Format the code');
  expect(toolResult(second!, 'run_command')).toContain(ANNEX_README);
  // The request's `calc` replaced the foreman's, by name.
  const envKeys = toolResult(second!, 'mcp__calc__env_keys').split(',');
  expect(envKeys).toContain('REQUEST_FLAG');
  expect(envKeys).not.toContain('IDENTITY_FLAG');
});

test('a FILE factory found in a repository: dispatched to, its foreman resolved from the file, its child run, the foreman finishes', async () => {
  const { key } = await ctx.newTeamKey();
  const plantEnv = await createEnvironment(ctx, key, {
    name: 'plant',
    github_repos: [{ owner: 'acme', repo: 'plant' }],
  });
  // Discovery happens when a run of the environment provisions.
  const look = uniqueName('plant-look');
  ctx.model.script(look, () => ({ text: 'looked' }));
  await waitForState(
    ctx,
    key,
    await createRun(ctx, key, { prompt: `Look ${look}`, config: { environment_id: plantEnv } }),
    ['SUCCEEDED'],
  );
  const factories = (await ctx.api.get('/api/v1/agent/factories').set(auth(key))).body.factories as {
    uid: string;
    name: string;
    source: Record<string, unknown>;
    agents: { uid: string; name: string; agent_type: string }[];
  }[];
  expect(factories.map((f) => [f.name, f.source.type])).toEqual([['plant-crew', 'FILE']]);
  const factory = factories[0]!;
  const lead = factory.agents.find((a) => a.agent_type === 'FOREMAN')!;
  const gardenerAgent = factory.agents.find((a) => a.agent_type === 'IMPLEMENT')!;

  const foreman = uniqueName('plant-lead');
  const gardener = uniqueName('plant-gardener');
  ctx.model.script(
    foreman,
    delegatingForeman(
      [
        { name: 'run_command', arguments: { command: 'cat */README.md' } },
        // A file agent is found by its short name.
        { name: 'dispatch_agent', arguments: { agent: 'gardener', prompt: `Water ${gardener}` } },
      ],
      'The plant is tended.',
    ),
  );
  ctx.model.script(gardener, () => ({ text: 'Watered.' }));

  const res = await dispatch(ctx, key, factory.uid, { prompt: `Tend the plant ${foreman}`, title: 'Tend' });
  expect(res.status).toBe(201);
  const parentId = res.body.run_id as string;
  const parent = await waitForState(ctx, key, parentId, ['SUCCEEDED'], undefined, 90_000);
  expect(parent.factory_uid).toBe(factory.uid);
  expect((parent.executor as { uid: string }).uid).toBe(lead.uid);
  expect(parent.status_message).toEqual({ message: 'The plant is tended.' });
  expect(configOf(parent)).toMatchObject({
    environment_id: plantEnv,
    model_id: 'openai/lead-model',
    skills: ['acme/tools:lint'],
  });
  expect(configOf(parent).base_prompt).toMatch(/^You lead the plant crew\.[\s\S]*Water before noon\.$/);
  const [first, second, third] = ctx.model.calls(foreman);
  expect(first!.model).toBe('lead-model');
  expect(first!.system).toContain('- lint: Lint the code');
  expect(toolResult(second!, 'run_command')).toContain(PLANT_README);
  const waited = JSON.parse(toolResult(third!, 'wait_for_runs')) as {
    runs: { run_id: string; state: string; message: string }[];
  };
  expect(waited.runs.map((r) => [r.state, r.message])).toEqual([['SUCCEEDED', 'Watered.']]);

  const [child, ...more] = await listRuns(ctx, key, `ancestor_run_id=${parentId}`);
  expect(more).toEqual([]);
  expect(child!.run_id).toBe(waited.runs[0]!.run_id);
  expect((child!.executor as { uid: string }).uid).toBe(gardenerAgent.uid);
  expect(child).toMatchObject({ factory_uid: factory.uid, parent_run_id: parentId, source: 'ORCHESTRATION' });
  expect(configOf(child!).environment_id).toBe(plantEnv);
  // Every agent of the factory is told the file's instructions.
  expect(ctx.model.calls(gardener)[0]!.system).toContain('Water before noon.');
});

test('attachments on a dispatch: 2 MiB goes through; every limit answers as on POST /agent/runs', async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await post(key, '/api/v1/agent/factories', { name: uniqueName('attach') });
  await post(key, '/api/v1/agent/identities', {
    name: uniqueName('lead'),
    agent_type: 'FOREMAN',
    factory_uid: factory.uid,
  });
  const marker = uniqueName('attached');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'wc -c < attachments/big.txt' } }] }
      : { text: 'measured' },
  );
  const big = Buffer.alloc(2 * 1024 * 1024, 'a');
  const res = await dispatch(ctx, key, factory.uid, {
    prompt: `Measure it ${marker}`,
    attachments: [{ data: big.toString('base64'), file_name: 'big.txt', mime_type: 'text/plain' }],
  });
  expect(res.status).toBe(201);
  const runId = res.body.run_id as string;
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  const [first, second] = ctx.model.calls(marker);
  expect(first!.messages[0]!.content).toContain(`attachments/big.txt (text/plain, ${big.length} bytes)`);
  expect(toolResult(second!, 'run_command').trim()).toContain(String(big.length));

  const one = (bytes: number) => ({
    data: Buffer.alloc(bytes).toString('base64'),
    file_name: 'x.txt',
    mime_type: 'text/plain',
  });
  const cases: [string, Record<string, unknown>, number][] = [
    [
      'a body past 1 MiB without attachments',
      { prompt: 'p', title: 't', metadata: { k: 'x'.repeat(MAX_BODY_BYTES) } },
      413,
    ],
    ['a file past its limit', { prompt: 'p', attachments: [one(MAX_ATTACHMENT_BYTES + 1)] }, 400],
    ['files past the total', { prompt: 'p', attachments: [1, 2, 3].map(() => one(3.5 * 1024 * 1024)) }, 400],
    [
      'a body past the limit with attachments',
      { prompt: 'p', attachments: [one((MAX_BODY_WITH_ATTACHMENTS_BYTES * 3) / 4)] },
      413,
    ],
  ];
  for (const [what, body, status] of cases) {
    const viaRuns = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send(body);
    const viaFactory = await dispatch(ctx, key, factory.uid, body);
    expect({ what, status: viaRuns.status }).toEqual({ what, status });
    expect({ what, status: viaFactory.status, detail: viaFactory.body.detail }).toEqual({
      what,
      status,
      detail: viaRuns.body.detail,
    });
  }
  // The larger limit is the dispatch route's only, not that of any path that looks like it.
  const withBig = {
    name: 'x',
    attachments: [{ data: big.toString('base64'), file_name: 'a', mime_type: 'text/plain' }],
  };
  const put = await ctx.api.put(`/api/v1/agent/factories/${factory.uid}`).set(auth(key)).send(withBig);
  expect({ status: put.status, detail: put.body.detail }).toEqual({
    status: 413,
    detail: `The body is larger than the limit of ${MAX_BODY_BYTES} bytes.`,
  });
  // Paths that only look like it take no body at all: none is read.
  for (const [url, status] of [
    [`/api/v1/agent/factories/${factory.uid}`, 405],
    [`/api/v1/agent/factories/${factory.uid}/runs/more`, 404],
    [`/api/v1/agent/factories/a/${factory.uid}/runs`, 404],
  ] as const) {
    const res = await ctx.api.post(url).set(auth(key)).send(withBig);
    expect({ url, status: res.status }).toEqual({ url, status });
  }
  // Nothing but the first dispatch was made.
  expect((await listRuns(ctx, key, '')).map((r) => r.run_id)).toEqual([runId]);
});

test("a ticket dispatch whose workflow never started is taken back whole, with its task; a later run of a task's conversation leaves it", async () => {
  // No worker: runs stay QUEUED and unstarted, as one whose workflow start Temporal refused.
  const quiet = await createTestContext({ worker: false });
  try {
    const { key } = await quiet.newTeamKey();
    const factory = await createFactory(quiet, key, [{ type: 'FOREMAN' }]);
    const send = (prompt: string) =>
      quiet.api.post(`/api/v1/factory/${factory.uid}/runs`).set(auth(key)).send({ prompt, ticket_ref: 'linear:X-1' });
    const [taken, kept] = await Promise.all([send('Taken back'), send('Kept')]);
    expect([taken.status, kept.status]).toEqual([201, 201]);
    const keptRun = await quiet.api
      .get(`/api/v1/agent/runs/${(kept.body as { run_id: string }).run_id}`)
      .set(auth(key));
    const later = await createRun(quiet, key, {
      prompt: 'Continues the kept work',
      conversation_id: (keptRun.body as { conversation_id: string }).conversation_id,
    });
    const tasks = async () =>
      (
        (await quiet.dataSource.query(`SELECT title FROM factory_tasks WHERE factory_uid = $1 ORDER BY title`, [
          factory.uid,
        ])) as { title: string }[]
      ).map((t) => t.title);
    expect(await tasks()).toEqual(['Kept', 'Taken back']);
    const runId = (taken.body as { run_id: string }).run_id;
    // What a create does when its workflow start fails.
    for (const id of [runId, later]) {
      expect(await quiet.dataSource.transaction((tx) => withdrawUnstartedRun(tx, id))).toBe(true);
    }
    expect(await tasks()).toEqual(['Kept']);
    expect((await quiet.api.get(`/api/v1/agent/runs/${runId}`).set(auth(key))).status).toBe(404);
    for (const id of [runId, later, (kept.body as { run_id: string }).run_id]) {
      await quiet.client.workflow.getHandle(runWorkflowId(id)).terminate('test over');
    }
  } finally {
    await quiet.close();
  }
});
