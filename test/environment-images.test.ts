import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createEnvironment } from './helpers/environments';
import {
  busyboxFiles,
  glibcFiles,
  missingImageTools,
  pushImage,
  startRegistry,
  type LocalRegistry,
} from './helpers/image-registry';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import type { ChatRequest } from './helpers/scripted-model';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { warpClientCalls, type WarpResult } from './helpers/warp-client';
import { ensureWarpClient, WARP_CLIENT } from '../infra/python-client';

/**
 * Environments' images: runs' commands get the image's root filesystem as `/`, pulled from a
 * registry (a real one, on loopback), cached by digest, with the team's credential for private
 * registries.
 */
const PASSWORD = `pw-${uniqueName('secret')}`;
let ctx: TestContext;
let open: LocalRegistry;
let locked: LocalRegistry;
let busyDigest: string;

beforeAll(async () => {
  expect(missingImageTools()).toEqual([]);
  [open, locked] = await Promise.all([startRegistry(), startRegistry({ user: 'ci-bot', password: PASSWORD })]);
  busyDigest = await pushImage(`${open.host}/tools/busy:v1`, busyboxFiles('marker-v1'), {
    // An image's variables reach commands; none may undo the sandbox's own.
    env: ['PATH=/bin:/opt/tool/bin', 'IMAGE_GREETING=hello-from-image', 'HTTP_PROXY=http://10.9.9.9:1', 'HOME=/root'],
    workingDir: '/srv',
  });
  await pushImage(`${locked.host}/private/busy:v1`, busyboxFiles('marker-private'), { creds: `ci-bot:${PASSWORD}` });
  ctx = await createTestContext({
    env: {
      IMAGE_INSECURE_REGISTRIES: `${open.host},${locked.host}`,
      IMAGE_ALLOWED_REGISTRIES: `${open.host},${locked.host}`,
      AGENT_SANDBOX_MAX_PROCESSES: '96',
      AGENT_SANDBOX_MAX_FILE_SIZE_MB: '8',
    },
  });
  await ensureWarpClient();
}, 360_000);
afterAll(async () => {
  await ctx?.close();
  await open?.stop();
  await locked?.stop();
});

/** A model that runs `command` once, then finishes with the command's output in its answer. */
function runsCommand(marker: string, command: string): void {
  ctx.model.script(marker, (req: ChatRequest, call) => {
    if (call === 1) return { text: '', toolCalls: [{ name: 'run_command', arguments: { command } }] };
    const result = req.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '';
    return { text: `Output:\n${result}` };
  });
}

async function notices(runId: string): Promise<string[]> {
  return (await transcript(ctx, runId)).filter((e) => e.kind === 'notice').map((e) => String(e.payload.message));
}

async function commandOutput(runId: string): Promise<string> {
  const events = await transcript(ctx, runId);
  return events
    .filter((e) => e.kind === 'tool_call')
    .map((e) => String(e.payload.output))
    .join('\n');
}

test('commands and setup run on the image, not the host; the tag is recorded as its digest; the next run is a cache hit', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, {
    name: 'busy',
    docker_image: `${open.host}/tools/busy:v1`,
    setup_commands: ['cat /etc/os-release > setup.txt'],
  });
  const marker = uniqueName('image');
  runsCommand(
    marker,
    'cat /etc/os-release /marker; echo "greeting=$IMAGE_GREETING proxy=${HTTP_PROXY:-none} home=$HOME path=$PATH"; ls /usr/bin/node /lib/x86_64-linux-gnu 2>&1 | head -2; id -u; pwd',
  );
  const runId = await createRun(ctx, key, { prompt: `Look around ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);

  const output = await commandOutput(runId);
  expect(output).toContain('ID=agent-runs-test');
  expect(output).toContain('marker-v1');
  expect(output).toContain('greeting=hello-from-image');
  // The sandbox's egress proxy and private home, not the image's.
  expect(output).toContain('proxy=http://127.0.0.1:3128');
  expect(output).not.toContain('10.9.9.9');
  expect(output).toContain('home=/home/agent');
  expect(output).toContain('path=/bin:/opt/tool/bin');
  // Nothing of the host's root: no node, no glibc directory.
  expect(output).toMatch(/\/usr\/bin\/node.*(No such file|can't access)/);
  expect(output).not.toContain('debian');
  expect(output).toContain('1000');
  expect(output).toContain('/workspace');
  // Setup ran there too.
  const setup = readFileSync(path.join(ctx.config.workspace.dir, runId, 'setup.txt'), 'utf8');
  expect(setup).toContain('ID=agent-runs-test');

  const [row] = (await ctx.dataSource.query(`SELECT image_reference, image_digest FROM runs WHERE run_id = $1`, [
    runId,
  ])) as { image_reference: string; image_digest: string }[];
  expect(row).toEqual({ image_reference: `${open.host}/tools/busy:v1`, image_digest: busyDigest });
  // umoci unpacked it as the image tools' uid, never as root (the worker here is root).
  const unpacked = path.join(
    ctx.config.images.cacheDir,
    'entries',
    busyDigest.slice('sha256:'.length),
    'rootfs',
    'marker',
  );
  expect(statSync(unpacked).uid).toBe(process.getuid?.() === 0 ? ctx.config.images.toolsUid : process.getuid?.());
  const first = (await notices(runId)).join('\n');
  expect(first).toContain(`Pulling ${open.host}/tools/busy:v1 (${busyDigest}`);
  expect(first).toContain(`Image ${open.host}/tools/busy:v1 is ${busyDigest}`);
  expect(first).toContain("the image's own user (0:0) and working directory (/srv) are not used");

  const again = uniqueName('image');
  runsCommand(again, 'cat /marker');
  const secondId = await createRun(ctx, key, { prompt: `Again ${again}`, config: { environment_id: envId } });
  await waitForState(ctx, key, secondId, ['SUCCEEDED']);
  const second = (await notices(secondId)).join('\n');
  expect(second).toContain("already in this worker's image cache");
  expect(second).not.toContain('Pulling');
  expect(await commandOutput(secondId)).toContain('marker-v1');
});

test(`${WARP_CLIENT}: the digest a run resolved: on the run, in its conversation's runs, and on its timeline's worker_container_ready`, async () => {
  const { key } = await ctx.newTeamKey();
  const reference = `${open.host}/tools/busy:v1`;
  const envId = await createEnvironment(ctx, key, { name: 'digest', docker_image: reference });
  const marker = uniqueName('digest');
  runsCommand(marker, 'cat /marker');
  const runId = await createRun(ctx, key, { prompt: `Read the marker ${marker}`, config: { environment_id: envId } });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const plain = await createRun(ctx, key, { prompt: `No image ${marker}` });
  await waitForState(ctx, key, plain, ['SUCCEEDED']);
  const [retrieved, listed, timeline, plainRun, plainTimeline] = await warpClientCalls(ctx.baseUrl, key, [
    { call: 'agent.runs.retrieve', args: [runId] },
    { call: 'agent.runs.list', kwargs: { limit: 2 } },
    { call: 'agent.runs.get_timeline', args: [runId] },
    { call: 'agent.runs.retrieve', args: [plain] },
    { call: 'agent.runs.get_timeline', args: [plain] },
  ]);
  const image = { image_reference: reference, image_digest: busyDigest };
  expect(retrieved).toMatchObject({ ok: { run_id: runId, ...image } });
  expect((listed as { ok: Record<string, unknown>[] }).ok).toEqual([
    expect.not.objectContaining({ image_digest: expect.anything() }),
    expect.objectContaining({ run_id: runId, ...image }),
  ]);
  type Timeline = { ok: { events: { event_type: string; payload: Record<string, unknown> }[] } };
  const ready = (t: WarpResult | undefined) =>
    (t as Timeline).ok.events.filter((e) => e.event_type === 'worker_container_ready').map((e) => e.payload);
  expect(ready(timeline)).toEqual([{ turn: 1, message: expect.stringContaining('Workspace on'), ...image }]);
  // A run on no image says none.
  expect((plainRun as { ok: Record<string, unknown> }).ok).not.toHaveProperty('image_digest');
  expect(ready(plainTimeline)).toEqual([{ turn: 1, message: expect.stringContaining('Workspace on') }]);
  const conversation = await ctx.api.get(`/api/v1/agent/conversations/${run.conversation_id as string}`).set(auth(key));
  expect(conversation.body.runs).toEqual([expect.objectContaining({ run_id: runId, ...image })]);
});

test('on an image, the sandbox holds: read-only root and cache, limits set, nothing of the host or the platform in reach', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'hostile', docker_image: `${open.host}/tools/busy:v1` });
  const marker = uniqueName('hostile');
  const hostPaths = [ctx.config.workspace.dir, ctx.config.images.cacheDir, '/root', '/usr/bin/node'];
  runsCommand(
    marker,
    [
      'echo "uid=$(id -u) nproc=$(ulimit -u) fsize=$(ulimit -f)"',
      'echo pwned > /bin/pwned 2>/dev/null || echo "bin is read-only"',
      'echo pwned >> /marker 2>/dev/null || echo "marker is read-only"',
      'echo pwned > /etc/passwd 2>/dev/null || echo "passwd is read-only"',
      `for p in ${hostPaths.join(' ')}; do ls -d "$p" 2>/dev/null && echo "SEES $p"; done`,
      // Every environment it can read (its own and its neighbours'; its sandbox's pid 1 refuses).
      'p=0; k=0; for f in /proc/[0-9]*/environ; do grep -q PATH= "$f" 2>/dev/null && p=$((p+1)); grep -q SECRETS_ENCRYPTION_KEY "$f" 2>/dev/null && k=$((k+1)); done',
      'echo "environs with a PATH: $p"; echo "environs with the key: $k"',
      // Its own network namespace: the only listener is sandbox-init's bridge to the proxy (port 3128).
      'echo "listeners: $(grep -c " 0A " /proc/net/tcp)"',
      'cat /proc/net/tcp',
      'echo finished',
    ].join('; '),
  );
  const runId = await createRun(ctx, key, { prompt: `Break out ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const output = await commandOutput(runId);
  expect(output).toContain('finished');
  // sandbox-init set the limits on a libc-less image; busybox's `ulimit -f` counts 512-byte blocks.
  expect(output).toContain(`uid=1000 nproc=96 fsize=${8 * 2048}`);
  expect(output).toContain('bin is read-only');
  expect(output).toContain('marker is read-only');
  expect(output).toContain('passwd is read-only');
  expect(output).not.toContain('SEES');
  expect(output).toMatch(/environs with a PATH: [1-9]/);
  expect(output).toContain('environs with the key: 0');
  expect(output).toContain('listeners: 1');
  expect(output).toContain(':0C38 ');
  const apiPort = Number(new URL(ctx.baseUrl).port).toString(16).toUpperCase().padStart(4, '0');
  expect(output).not.toContain(`:${apiPort} `);
  // The cache's copy is as it was pulled.
  const cached = (await ctx.dataSource.query(`SELECT image_digest FROM runs WHERE run_id = $1`, [runId])) as {
    image_digest: string;
  }[];
  const rootfs = path.join(ctx.config.images.cacheDir, 'entries', cached[0]!.image_digest.slice(7), 'rootfs');
  expect(readFileSync(path.join(rootfs, 'marker'), 'utf8')).toBe('marker-v1\n');
  expect(existsSync(path.join(rootfs, 'bin/pwned'))).toBe(false);
});

test("a glibc image's own loader and libraries run its programs; commands go through its bash", async () => {
  const { key } = await ctx.newTeamKey();
  await pushImage(`${open.host}/tools/glibc:v1`, await glibcFiles('glibc-test'));
  const envId = await createEnvironment(ctx, key, { name: 'glibc', docker_image: `${open.host}/tools/glibc:v1` });
  const marker = uniqueName('glibc');
  runsCommand(
    marker,
    'echo "bash=${BASH_VERSION%%.*}"; cat /etc/os-release; [ -e /usr/bin/node ] || echo "no node here"',
  );
  const runId = await createRun(ctx, key, { prompt: `Use bash ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const output = await commandOutput(runId);
  expect(output).toMatch(/bash=\d/);
  expect(output).toContain('ID=glibc-test');
  expect(output).toContain('no node here');
});

test('two runs of a new image at once pull it once', async () => {
  const { key } = await ctx.newTeamKey();
  const digest = await pushImage(`${open.host}/tools/busy:twice`, busyboxFiles('marker-twice'));
  const envId = await createEnvironment(ctx, key, { name: 'twice', docker_image: `${open.host}/tools/busy:twice` });
  const markers = [uniqueName('twice'), uniqueName('twice')];
  for (const m of markers) runsCommand(m, 'cat /marker');
  const ids = await Promise.all(
    markers.map((m) => createRun(ctx, key, { prompt: `Both ${m}`, config: { environment_id: envId } })),
  );
  await Promise.all(ids.map((id) => waitForState(ctx, key, id, ['SUCCEEDED'])));
  const all = (await Promise.all(ids.map(notices))).flat().join('\n');
  expect(all.match(/Pulling /g) ?? []).toHaveLength(1);
  for (const id of ids) expect(await commandOutput(id)).toContain('marker-twice');
  const rows = (await ctx.dataSource.query(`SELECT image_digest FROM runs WHERE run_id = ANY($1)`, [ids])) as {
    image_digest: string;
  }[];
  expect(rows.map((r) => r.image_digest)).toEqual([digest, digest]);
});

test("a private image needs the team's credential, which never reaches the sandbox; another team's cached copy does not help", async () => {
  const { key } = await ctx.newTeamKey('personal', uniqueName('team'), 'admin');
  const reference = `${locked.host}/private/busy:v1`;
  const envId = await createEnvironment(ctx, key, { name: 'private', docker_image: reference });

  const denied = await createRun(ctx, key, { prompt: 'No credential yet', config: { environment_id: envId } });
  const failed = await waitForState(ctx, key, denied, ['FAILED']);
  const status = failed.status_message as { message: string; error_code: string; retryable: boolean };
  expect(status.error_code).toBe('environment_setup_failed');
  expect(status.retryable).toBe(false);
  expect(status.message).toContain('image_pull_unauthorized');
  expect(status.message).toContain('kind registry_credentials');

  const stored = await ctx.api
    .post('/api/v1/agent/secrets')
    .set(auth(key))
    .send({ name: 'registry', kind: 'registry_credentials', value: `ci-bot:${PASSWORD}@${locked.host}` });
  expect(stored.status).toBe(201);
  const marker = uniqueName('private');
  runsCommand(
    marker,
    `cat /marker; env | grep -c ${PASSWORD.slice(0, 8)}; grep -rl ${PASSWORD.slice(0, 8)} /etc /tmp /home /run /workspace /srv /bin 2>/dev/null | head -3; echo scanned`,
  );
  const allowed = await createRun(ctx, key, { prompt: `With it ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, allowed, ['SUCCEEDED']);
  const output = await commandOutput(allowed);
  expect(output).toContain('marker-private');
  expect(output).toMatch(/marker-private\n0\nscanned/);

  // Cached now; a team without the credential still gets nothing from it.
  const other = await ctx.newTeamKey();
  const otherEnv = await createEnvironment(ctx, other.key, { name: 'borrowed', docker_image: reference });
  const borrowed = await createRun(ctx, other.key, { prompt: 'Borrow it', config: { environment_id: otherEnv } });
  const refused = await waitForState(ctx, other.key, borrowed, ['FAILED']);
  expect((refused.status_message as { message: string }).message).toContain('image_pull_unauthorized');
});

test('a malformed registry credential is 400 and stores nothing', async () => {
  const { key } = await ctx.newTeamKey('personal', uniqueName('team'), 'admin');
  const res = await ctx.api
    .post('/api/v1/agent/secrets')
    .set(auth(key))
    .send({ name: 'bad', kind: 'registry_credentials', value: 'just-a-token' });
  expect(res.status).toBe(400);
  expect((res.body as { detail: string }).detail).toContain('username:password@registry');
  expect((await ctx.api.get('/api/v1/agent/secrets/bad').set(auth(key))).status).toBe(404);
});

test('an unknown image fails the run with image_not_found, a registry no longer allowed with image_registry_not_allowed; an image without a shell says so to the agent', async () => {
  const { key } = await ctx.newTeamKey();
  const missing = await createEnvironment(ctx, key, { name: 'missing', docker_image: `${open.host}/tools/nope:v9` });
  const runId = await createRun(ctx, key, { prompt: 'Nothing there', config: { environment_id: missing } });
  const failed = await waitForState(ctx, key, runId, ['FAILED']);
  expect((failed.status_message as { message: string }).message).toContain('image_not_found');

  // Saved before the operator narrowed IMAGE_ALLOWED_REGISTRIES: refused when a run needs it.
  const narrowed = await createEnvironment(ctx, key, { name: 'narrowed', docker_image: `${open.host}/tools/busy:v1` });
  await ctx.dataSource.query(
    `UPDATE environments SET config = jsonb_set(config, '{docker_image}', '"ghcr.io/acme/builder:1"') WHERE uid = $1`,
    [narrowed],
  );
  const narrowedRun = await createRun(ctx, key, { prompt: 'Elsewhere', config: { environment_id: narrowed } });
  const refused = await waitForState(ctx, key, narrowedRun, ['FAILED']);
  const refusal = refused.status_message as { message: string; error_code: string };
  expect(refusal.error_code).toBe('environment_setup_failed');
  expect(refusal.message).toContain('image_registry_not_allowed');
  expect(refusal.message).toContain('ghcr.io, which IMAGE_ALLOWED_REGISTRIES no longer lists');

  // A CLI harness cannot run on an image yet: said at provisioning, not by a confusing failure later.
  const imaged = await createEnvironment(ctx, key, { name: 'imaged', docker_image: `${open.host}/tools/busy:v1` });
  const harnessRun = await createRun(ctx, key, {
    prompt: 'With Codex',
    config: { environment_id: imaged, harness: { type: 'codex' } },
  });
  const unsupported = await waitForState(ctx, key, harnessRun, ['FAILED']);
  expect((unsupported.status_message as { message: string }).message).toContain(
    "image_unsupported: the codex harness does not run on an environment's image yet",
  );

  await pushImage(`${open.host}/tools/shellless:v1`, { hello: { text: 'no shell here\n' } });
  const bare = await createEnvironment(ctx, key, { name: 'bare', docker_image: `${open.host}/tools/shellless:v1` });
  const marker = uniqueName('bare');
  runsCommand(marker, 'echo hi');
  const bareRun = await createRun(ctx, key, { prompt: `Try ${marker}`, config: { environment_id: bare } });
  await waitForState(ctx, key, bareRun, ['SUCCEEDED']);
  expect(await commandOutput(bareRun)).toContain('has no shell (/bin/bash or /bin/sh)');
  expect(existsSync(path.join(ctx.config.workspace.dir, bareRun))).toBe(true);
});
