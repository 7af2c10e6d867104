import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createEnvironment } from './helpers/environments';
import { createGitHost } from './helpers/git-fixtures';
import { startMcpHttpServer } from './helpers/mcp-http-server';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

const skill = (name: string, description: string, body: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

const git = createGitHost();
git.addRepo('acme', 'ops', {
  '.agents/skills/deploy/SKILL.md': skill(
    'deploy',
    'Deploy the service safely',
    'Always run the smoke test after deploying.',
  ),
  'docs/release/SKILL.md': skill('release', 'Cut a release', 'Tag the release and write the changelog.'),
});
git.addRepo('acme', 'tools', {
  '.claude/skills/lint/SKILL.md': skill('lint', 'Lint the code', 'Run the linter with --fix first.'),
});

const REPO_ROOT = path.resolve(__dirname, '..');
let ctx: TestContext;
let http: Awaited<ReturnType<typeof startMcpHttpServer>>;
beforeAll(async () => {
  // The MCP test servers listen on loopback, which only an operator's allow-list opens.
  // The stdio fixture runs from this repository with tsx, which the sandbox shows only when told to.
  ctx = await createTestContext({
    env: {
      GIT_BASE_URL: git.baseUrl,
      OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
      AGENT_SANDBOX_READONLY_PATHS: `${path.join(REPO_ROOT, 'node_modules')},${path.join(REPO_ROOT, 'test/fixtures')}`,
    },
  });
  http = await startMcpHttpServer('s3cret', { colour: 'teal' });
});
afterAll(async () => {
  await ctx?.close();
  await http?.stop();
});

type Status = { message: string; error_code: string };

test('a skill by name becomes the base prompt; the run is labelled with it and lists repository skills', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'ops', github_repos: [{ owner: 'acme', repo: 'ops' }] });
  const marker = uniqueName('skill-name');
  ctx.model.script(marker, () => ({ text: 'deployed' }));
  const runId = await createRun(ctx, key, {
    prompt: `Ship it ${marker}`,
    skill: 'acme/ops:deploy',
    config: { environment_id: envId },
  });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.agent_skill).toEqual({
    name: 'deploy',
    description: 'Deploy the service safely',
    full_path: 'acme/ops/.agents/skills/deploy/SKILL.md',
  });
  expect(run.agent_config).toMatchObject({ name: 'deploy', skill_spec: 'acme/ops:deploy' });
  const system = ctx.model.calls(marker)[0]!.system!;
  expect(system).toContain('Always run the smoke test after deploying.');
  expect(system).toMatch(/- deploy: Deploy the service safely/);
  expect(system).toMatch(/- svc-platform: /);
  const listed = await ctx.api.get('/api/v1/agent/runs?name=deploy').set(auth(key));
  expect(listed.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([runId]);
});

test('a skill by path, from a repository cloned for the purpose', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('skill-path');
  ctx.model.script(marker, () => ({ text: 'released' }));
  const runId = await createRun(ctx, key, {
    prompt: `Release ${marker}`,
    config: { skill_spec: 'acme/ops:docs/release/SKILL.md' },
  });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.agent_skill).toMatchObject({ name: 'release', full_path: 'acme/ops/docs/release/SKILL.md' });
  expect(ctx.model.calls(marker)[0]!.system).toContain('Tag the release and write the changelog.');
});

test('a bundled skill by id', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('bundled');
  ctx.model.script(marker, () => ({ text: 'ok' }));
  const runId = await createRun(ctx, key, {
    prompt: `Use the API ${marker}`,
    skill: 'agent-runs/bundled:svc-platform',
  });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.agent_skill).toMatchObject({ bundled_skill_id: 'svc-platform', name: 'svc-platform' });
  expect(run.agent_config).toMatchObject({ name: 'svc-platform' });
  expect(ctx.model.calls(marker)[0]!.system).toContain('/agent/runs');
});

test('a missing skill ends the run FAILED with resource_not_found saying where it looked', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await createRun(ctx, key, { prompt: 'x', skill: 'acme/ops:nope' });
  const run = await waitForState(ctx, key, runId, ['FAILED']);
  const status = run.status_message as Status;
  expect(status.error_code).toBe('resource_not_found');
  expect(status.message).toContain('.agents/skills/nope/SKILL.md');
  expect(status.message).toContain('.claude/skills/nope/SKILL.md');
});

test('read_skill loads a bundled and a repository skill; the conversation records both as read_skill actions', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'tools', github_repos: [{ owner: 'acme', repo: 'tools' }] });
  const marker = uniqueName('read-skill');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'read_skill', arguments: { name: 'create-skill' } },
            { name: 'read_skill', arguments: { name: 'lint' } },
          ],
        }
      : { text: 'read them' },
  );
  const runId = await createRun(ctx, key, { prompt: `Learn ${marker}`, config: { environment_id: envId } });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const toolResults = ctx.model
    .calls(marker)[1]!
    .messages.filter((m) => m.role === 'tool')
    .map((m) => m.content);
  expect(toolResults[0]).toContain('name: create-skill');
  expect(toolResults[1]).toContain('Run the linter with --fix first.');

  const conversation = await ctx.api.get(`/api/v1/agent/conversations/${run.conversation_id as string}`).set(auth(key));
  expect(conversation.status).toBe(200);
  const reads = (conversation.body.actions as { kind: string; input: unknown }[]).filter(
    (a) => a.kind === 'read_skill',
  );
  expect(reads.map((a) => a.input)).toEqual([
    { bundled_skill_id: 'create-skill' },
    { skill_path: 'tools/.claude/skills/lint/SKILL.md' },
  ]);
  const advertised = (conversation.body.advertised_skills as { name: string }[]).map((s) => s.name);
  expect(advertised).toEqual(expect.arrayContaining(['svc-platform', 'create-skill', 'lint']));
  const other = await ctx.newTeamKey();
  expect(
    (await ctx.api.get(`/api/v1/agent/conversations/${run.conversation_id as string}`).set(auth(other.key))).status,
  ).toBe(404);
});

test('MCP tools over stdio and Streamable HTTP: offered, called, recorded; a tool error goes back to the model', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('mcp');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'mcp__calc__add', arguments: { a: 2, b: 3 } },
            { name: 'mcp__calc__env_keys', arguments: {} },
            { name: 'mcp__calc__fail', arguments: {} },
            { name: 'mcp__kb__lookup', arguments: { key: 'colour' } },
          ],
        }
      : { text: 'used the tools' },
  );
  const runId = await createRun(ctx, key, {
    prompt: `Use MCP ${marker}`,
    config: {
      mcp_servers: {
        calc: {
          command: process.execPath,
          args: [
            '--import',
            pathToFileURL(path.join(REPO_ROOT, 'node_modules/tsx/dist/loader.mjs')).href,
            path.join(REPO_ROOT, 'test/fixtures/mcp-stdio-server.ts'),
          ],
          env: { FIXTURE_FLAG: 'on' },
        },
        kb: { url: http.url, headers: { authorization: 'Bearer s3cret' } },
      },
    },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  expect(ctx.model.calls(marker)[0]!.tools).toEqual(
    expect.arrayContaining(['mcp__calc__add', 'mcp__calc__env_keys', 'mcp__calc__fail', 'mcp__kb__lookup']),
  );
  const results = ctx.model
    .calls(marker)[1]!
    .messages.filter((m) => m.role === 'tool')
    .map((m) => m.content);
  expect(results[0]).toBe('5');
  const envKeys = results[1]!.split(',');
  expect(envKeys).toContain('FIXTURE_FLAG');
  expect(envKeys).not.toContain('OPENAI_API_KEY');
  expect(envKeys).not.toContain('DATABASE_URL');
  expect(results[2]).toContain('this tool always fails');
  expect(results[3]).toBe('teal');
  expect(http.calls).toContain('colour');
  const calls = (await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call');
  expect(calls.map((e) => [e.payload.name, e.payload.is_error])).toEqual([
    ['mcp__calc__add', false],
    ['mcp__calc__env_keys', false],
    ['mcp__calc__fail', true],
    ['mcp__kb__lookup', false],
  ]);
});

test('an MCP server that does not start fails the run, naming the server', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await createRun(ctx, key, {
    prompt: 'x',
    config: { mcp_servers: { ghost: { command: '/nonexistent/mcp-server-binary' } } },
  });
  const run = await waitForState(ctx, key, runId, ['FAILED'], undefined, 60_000);
  expect((run.status_message as Status).message).toContain('"ghost"');
});

test('the Anthropic Messages protocol: a tool round trip through the anthropic/ provider', async () => {
  const anthropic = await createTestContext({
    env: {
      ANTHROPIC_API_KEY: 'test-anthropic',
      ANTHROPIC_BASE_URL: ctx.config.models.openai.baseUrl.replace(/\/v1$/, ''),
    },
  });
  try {
    const { key } = await anthropic.newTeamKey();
    const marker = uniqueName('anthropic');
    ctx.model.script(marker, (_req, call) =>
      call === 1
        ? { text: 'Writing.', toolCalls: [{ name: 'write_file', arguments: { path: 'note.md', content: 'hi' } }] }
        : { text: 'done' },
    );
    const runId = await createRun(anthropic, key, {
      prompt: `Note ${marker}`,
      config: { model_id: 'anthropic/claude-test' },
    });
    const run = await waitForState(anthropic, key, runId, ['SUCCEEDED']);
    const calls = ctx.model.calls(marker);
    expect(calls.map((c) => c.protocol)).toEqual(['anthropic', 'anthropic']);
    expect(calls[0]!.model).toBe('claude-test');
    // The stable prefix (tools and system prompt) is marked for Anthropic's prompt cache.
    expect(calls.every((c) => c.cacheControl)).toBe(true);
    expect(calls[1]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(calls[1]!.messages[2]!.content).toContain('Wrote 2 bytes to note.md');
    expect(run.request_usage).toEqual({ total_tokens: 20 });
  } finally {
    await anthropic.close();
  }
});

test('config.skills and the agent identity’s skills are advertised besides the workspace’s', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('extra-skills');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const identity = await ctx.api
    .post('/api/v1/agent/identities')
    .set(auth(key))
    .send({ name: uniqueName('releaser'), skills: ['acme/ops:docs/release/SKILL.md'] })
    .expect(201);
  const runId = await createRun(ctx, key, {
    prompt: `Tidy up ${marker}`,
    agent_identity_uid: identity.body.uid,
    config: { skills: ['acme/tools:lint'] },
  });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.agent_config).toMatchObject({ skills: ['acme/ops:docs/release/SKILL.md', 'acme/tools:lint'] });
  const system = ctx.model.calls(marker)[0]!.system!;
  expect(system).toContain('Cut a release');
  expect(system).toContain('Lint the code');
  // Advertised, not imposed: neither became the run's skill.
  expect(run.agent_skill).toBeUndefined();
});
