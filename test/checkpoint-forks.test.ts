import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';
import { Readable } from 'node:stream';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * A run's checkpoints over the API (list, item, the workspace's `.tar.gz`) and forks from them:
 * the fork's conversation is the source's up to that step, its workspace that checkpoint.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

jest.setTimeout(180_000);

type Summary = { checkpoint_id: string; turn: number; step: number; files: number; bytes: number; bytes_added: number };

/** One run_command per step, then a final answer. */
function scriptCommands(marker: string, commands: string[]) {
  ctx.model.script(marker, (_req, call) =>
    call <= commands.length
      ? { text: `step ${call}`, toolCalls: [{ name: 'run_command', arguments: { command: commands[call - 1]! } }] }
      : { text: `done ${marker}` },
  );
}

/** The files of a `.tar.gz` by path: a file's text, `dir`, or `-> target`. */
async function untar(gz: Buffer): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const tar = extract();
  const done = new Promise<void>((resolve, reject) => {
    tar.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        files[header.name] =
          header.type === 'symlink'
            ? `-> ${header.linkname}`
            : header.type === 'directory'
              ? 'dir'
              : Buffer.concat(chunks).toString('utf8');
        next();
      });
    });
    tar.on('finish', resolve);
    tar.on('error', reject);
  });
  Readable.from([gunzipSync(gz)]).pipe(tar);
  await done;
  return files;
}

async function checkpointsOf(
  key: string,
  runId: string,
  query = '',
): Promise<{
  status: number;
  body: { checkpoints: Summary[]; page_info: { has_next_page: boolean; next_cursor?: string } };
}> {
  const res = await ctx.api.get(`/api/v1/agent/runs/${runId}/checkpoints${query}`).set(auth(key));
  return { status: res.status, body: res.body };
}

test('a run lists its checkpoints oldest first, each downloads as its workspace then, and a fork starts from one with the conversation up to it', async () => {
  const { key } = await ctx.newTeamKey();
  // The fork's script first: its conversation holds the source's marker too, and the first script found answers.
  const forkMarker = uniqueName('fork');
  scriptCommands(forkMarker, ['cat a.txt; ls']);
  const marker = uniqueName('fork-source');
  scriptCommands(marker, [
    'echo one > a.txt && ln -s a.txt link && mkdir -p sub && echo deep > sub/d.txt',
    'echo two > a.txt && echo bee > b.txt',
  ]);
  const sourceId = await createRun(ctx, key, { prompt: `Work ${marker}` });
  await waitForState(ctx, key, sourceId, ['SUCCEEDED']);

  // Oldest first: as provisioned (step 0), then each step that changed files.
  const listed = await checkpointsOf(key, sourceId);
  expect(listed.status).toBe(200);
  expect(listed.body.checkpoints.map((c) => [c.turn, c.step])).toEqual([
    [1, 0],
    [1, 1],
    [1, 2],
  ]);
  const [provisioned, afterOne, afterTwo] = listed.body.checkpoints as [Summary, Summary, Summary];
  expect(afterOne.bytes_added).toBeGreaterThan(0);
  expect(afterTwo.files).toBeGreaterThan(afterOne.files);
  expect(listed.body.page_info).toEqual({ has_next_page: false });

  // Pages of one: the cursor continues where the last page ended.
  const first = await checkpointsOf(key, sourceId, '?limit=1');
  expect(first.body.checkpoints.map((c) => c.checkpoint_id)).toEqual([provisioned.checkpoint_id]);
  expect(first.body.page_info.has_next_page).toBe(true);
  const second = await checkpointsOf(key, sourceId, `?limit=1&cursor=${first.body.page_info.next_cursor!}`);
  expect(second.body.checkpoints.map((c) => c.checkpoint_id)).toEqual([afterOne.checkpoint_id]);
  expect((await checkpointsOf(key, sourceId, '?cursor=bm90LWEtY3Vyc29y')).status).toBe(400);

  // The item's signed URL: the workspace after step 1, symlinks as links, without a key.
  const item = await ctx.api.get(`/api/v1/agent/runs/${sourceId}/checkpoints/${afterOne.checkpoint_id}`).set(auth(key));
  expect(item.status).toBe(200);
  expect(item.body).toMatchObject({ ...afterOne, download_url: expect.stringContaining('/downloads/checkpoints/') });
  const download = await fetch(item.body.download_url as string);
  expect(download.status).toBe(200);
  expect(download.headers.get('content-type')).toBe('application/gzip');
  const files = await untar(Buffer.from(await download.arrayBuffer()));
  expect(files).toMatchObject({
    'workspace/a.txt': 'one\n',
    'workspace/link': '-> a.txt',
    'workspace/sub/d.txt': 'deep\n',
  });
  expect(files['workspace/b.txt']).toBeUndefined();
  expect(Object.keys(files).filter((p) => !p.startsWith('workspace'))).toEqual([]);
  const altered = (item.body.download_url as string).replace(/signature=./, 'signature=A');
  expect((await fetch(altered)).status).toBe(403);

  // Fork from step 1: the model sees the source's conversation up to that step, then the new prompt.
  const forked = await ctx.api
    .post(`/api/v1/agent/runs/${sourceId}/fork`)
    .set(auth(key))
    .send({ checkpoint_id: afterOne.checkpoint_id, prompt: `Go on ${forkMarker}` });
  expect(forked.status).toBe(201);
  expect(forked.body).toEqual({
    run_id: expect.any(String),
    task_id: forked.body.run_id,
    state: 'QUEUED',
    forked_from: { run_id: sourceId, checkpoint_id: afterOne.checkpoint_id },
  });
  const forkId = forked.body.run_id as string;
  const done = await waitForState(ctx, key, forkId, ['SUCCEEDED']);
  expect(done.forked_from).toEqual({ run_id: sourceId, checkpoint_id: afterOne.checkpoint_id });
  expect(done.title).toMatch(/^Fork of /);

  const [firstCall] = ctx.model.calls(forkMarker);
  const said = firstCall!.messages.map(
    (m) => `${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`,
  );
  expect(said.filter((m) => m.startsWith('user:'))).toEqual([
    expect.stringContaining(`Work ${marker}`),
    expect.stringContaining(`Go on ${forkMarker}`),
  ]);
  expect(said.some((m) => m.includes('step 1'))).toBe(true);
  expect(said.some((m) => m.includes('step 2'))).toBe(false);

  // Its workspace is the checkpoint: step 1's a.txt, no b.txt.
  const events = await transcript(ctx, forkId);
  const output = events.filter((e) => e.kind === 'tool_call').map((e) => String(e.payload.output));
  expect(output.join('\n')).toContain('one');
  expect(output.join('\n')).not.toContain('b.txt');
  // Nothing of the source's ends is announced again: its state entries are its own.
  expect(events.filter((e) => e.kind === 'state').map((e) => e.payload.state)).toEqual([
    'QUEUED',
    'INPROGRESS',
    'SUCCEEDED',
  ]);

  // The source is unchanged.
  expect((await getRun(ctx, key, sourceId)).forked_from).toBeUndefined();
  expect((await checkpointsOf(key, sourceId)).body.checkpoints).toHaveLength(3);
});

test("another team's run or checkpoint is 404; a run with no checkpoint is 409; a fork without checkpoint_id starts from the latest", async () => {
  const { key } = await ctx.newTeamKey();
  const { key: otherKey } = await ctx.newTeamKey();
  const forkMarker = uniqueName('fork-of-latest');
  scriptCommands(forkMarker, ['cat l.txt']);
  const marker = uniqueName('fork-latest');
  scriptCommands(marker, ['echo latest > l.txt']);
  const sourceId = await createRun(ctx, key, { prompt: `Work ${marker}` });
  await waitForState(ctx, key, sourceId, ['SUCCEEDED']);
  const { checkpoints } = (await checkpointsOf(key, sourceId)).body;
  const latest = checkpoints.at(-1)!;

  expect((await checkpointsOf(otherKey, sourceId)).status).toBe(404);
  const foreignItem = await ctx.api
    .get(`/api/v1/agent/runs/${sourceId}/checkpoints/${latest.checkpoint_id}`)
    .set(auth(otherKey));
  expect(foreignItem.status).toBe(404);
  const foreignFork = await ctx.api
    .post(`/api/v1/agent/runs/${sourceId}/fork`)
    .set(auth(otherKey))
    .send({ prompt: 'steal' });
  expect(foreignFork.status).toBe(404);
  const badField = await ctx.api
    .post(`/api/v1/agent/runs/${sourceId}/fork`)
    .set(auth(key))
    .send({ prompt: 'x', nope: 1 });
  expect(badField.status).toBe(400);

  // A run whose checkpoints are gone is as one that has none yet (a run still queued).
  const bare = await createRun(ctx, key, { prompt: `Bare ${uniqueName('bare')}` });
  await waitForState(ctx, key, bare, ['SUCCEEDED', 'FAILED', 'ERROR']);
  await ctx.dataSource.query(`DELETE FROM checkpoints WHERE run_id = $1`, [bare]);
  const conflict = await ctx.api.post(`/api/v1/agent/runs/${bare}/fork`).set(auth(key)).send({});
  expect(conflict.status).toBe(409);
  expect(conflict.body.detail).toContain('has no checkpoint yet');

  const forked = await ctx.api
    .post(`/api/v1/agent/runs/${sourceId}/fork`)
    .set(auth(key))
    .send({ prompt: `Read ${forkMarker}` });
  expect(forked.status).toBe(201);
  expect(forked.body.forked_from).toEqual({ run_id: sourceId, checkpoint_id: latest.checkpoint_id });
  await waitForState(ctx, key, forked.body.run_id as string, ['SUCCEEDED']);
  const output = (await transcript(ctx, forked.body.run_id as string))
    .filter((e) => e.kind === 'tool_call')
    .map((e) => String(e.payload.output));
  expect(output.join('\n')).toContain('latest');
});

const CLI = path.join(__dirname, '..', 'bin', 'agent-runs.mjs');

/** Runs `agent-runs <args>` against the test stack with `key`. */
function cli(key: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['AGENT_RUNS_URL', 'AGENT_RUNS_API_KEY', 'FORCE_COLOR', 'NO_COLOR']) delete env[name];
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...env, AGENT_RUNS_CLI_FROM_SOURCE: '1', AGENT_RUNS_URL: ctx.baseUrl, AGENT_RUNS_API_KEY: key },
  });
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('agent-runs checkpoints lists them and downloads one; agent-runs fork --wait starts from one', async () => {
  const { key } = await ctx.newTeamKey();
  const forkMarker = uniqueName('cli-fork');
  scriptCommands(forkMarker, ['cat c.txt']);
  const marker = uniqueName('cli-source');
  scriptCommands(marker, ['echo from-cli > c.txt']);
  const sourceId = await createRun(ctx, key, { prompt: `Work ${marker}` });
  await waitForState(ctx, key, sourceId, ['SUCCEEDED']);

  const listed = await cli(key, ['--json', 'checkpoints', sourceId]);
  expect(listed.code).toBe(0);
  const { checkpoints } = JSON.parse(listed.stdout) as { checkpoints: Summary[] };
  expect(checkpoints.map((c) => c.step)).toEqual([0, 1]);
  const human = await cli(key, ['checkpoints', sourceId]);
  expect(human.stdout).toContain(`${checkpoints[1]!.checkpoint_id}  turn 1 step 1`);

  const target = path.join(mkdtempSync(path.join(os.tmpdir(), 'cli-checkpoint-')), 'step1.tar.gz');
  const saved = await cli(key, [
    'checkpoints',
    sourceId,
    '--download',
    checkpoints[1]!.checkpoint_id,
    '--output',
    target,
  ]);
  expect(saved.code).toBe(0);
  expect(await untar(readFileSync(target))).toMatchObject({ 'workspace/c.txt': 'from-cli\n' });

  const forked = await cli(key, [
    'fork',
    sourceId,
    `Read ${forkMarker}`,
    '--checkpoint',
    checkpoints[1]!.checkpoint_id,
    '--wait',
  ]);
  expect([forked.code, forked.stderr]).toEqual([0, expect.any(String)]);
  const forkId = forked.stdout.split('\n')[0]!;
  expect((await getRun(ctx, key, forkId)).forked_from).toEqual({
    run_id: sourceId,
    checkpoint_id: checkpoints[1]!.checkpoint_id,
  });
  const output = (await transcript(ctx, forkId))
    .filter((e) => e.kind === 'tool_call')
    .map((e) => String(e.payload.output));
  expect(output.join('\n')).toContain('from-cli');

  const missing = await cli(key, ['fork', sourceId, '--checkpoint', '01936f1e-8b0a-7c3e-9d52-4f6a1b2c3d4e']);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain('has no checkpoint 01936f1e-8b0a-7c3e-9d52-4f6a1b2c3d4e');
});
