import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import { createApp } from '../api/app';
import { MAX_ATTACHMENT_BYTES } from '../core/attachments';
import { createLogger } from '../core/logger';
import { recordFileArtifact } from '../db/artifacts';
import { objectBlobStore } from '../infra/object-store/object-blob-store';
import { contentKey } from '../infra/object-store/object-store';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

const workspaceOf = (runId: string) => path.join(ctx.config.workspace.dir, runId);
const BINARY = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0]);

interface ArtifactResponse {
  artifact_type: string;
  artifact_uid: string;
  created_at: string;
  data: Record<string, unknown> & { download_url: string; expires_at: string };
}

/** Downloads with no API key at all, as a browser following the link would. */
async function download(url: string): Promise<{ status: number; bytes: Buffer; body: unknown; type: string | null }> {
  const res = await fetch(url);
  const bytes = Buffer.from(await res.arrayBuffer());
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    body = undefined;
  }
  return { status: res.status, bytes, body, type: res.headers.get('content-type') };
}

/** The run that uploads two artifacts; shared by the tests that look at them. */
let uploaded: { key: string; runId: string; artifactUids: string[] };

test('upload_artifact records FILE artifacts: on the run, by GET, downloadable without a key', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('artifacts');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return {
        text: 'Writing the files.',
        toolCalls: [
          { name: 'write_file', arguments: { path: 'out/report.txt', content: 'hello artifact\n' } },
          {
            name: 'run_command',
            arguments: {
              command: `printf '${[...BINARY].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}' > out/data.bin`,
            },
          },
        ],
      };
    if (call === 2)
      return {
        text: 'Uploading.',
        toolCalls: [
          {
            name: 'upload_artifact',
            arguments: { filepath: 'out/report.txt', description: 'The report', title: 'Report' },
          },
          { name: 'upload_artifact', arguments: { filepath: '/workspace/out/data.bin' } },
        ],
      };
    return { text: 'Uploaded both.' };
  });
  const runId = await createRun(ctx, key, { prompt: `Make a report ${marker}` });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);

  const toolResults = ctx.model
    .calls(marker)[2]!
    .messages.filter((m) => m.role === 'tool')
    .slice(-2);
  expect(toolResults.map((m) => m.content)).toEqual([
    expect.stringMatching(/^Uploaded out\/report\.txt \(15 bytes\) as artifact [0-9a-f-]{36}\.$/),
    expect.stringMatching(/^Uploaded out\/data\.bin \(8 bytes\) as artifact /),
  ]);

  const artifacts = run.artifacts as { artifact_type: string; created_at: string; data: Record<string, unknown> }[];
  expect(artifacts).toHaveLength(2);
  expect(artifacts[0]).toEqual({
    artifact_type: 'FILE',
    created_at: expect.any(String),
    data: {
      artifact_uid: expect.any(String),
      filename: 'report.txt',
      filepath: 'out/report.txt',
      mime_type: 'text/plain',
      size_bytes: 15,
      description: 'The report',
      title: 'Report',
    },
  });
  expect(artifacts[1]!.data).toEqual({
    artifact_uid: expect.any(String),
    filename: 'data.bin',
    filepath: 'out/data.bin',
    mime_type: 'application/octet-stream',
    size_bytes: 8,
  });
  const artifactUids = artifacts.map((a) => a.data.artifact_uid as string);

  const got = await ctx.api.get(`/api/v1/agent/artifacts/${artifactUids[0]}`).set(auth(key));
  expect(got.status).toBe(200);
  const body = got.body as ArtifactResponse;
  expect(body).toEqual({
    artifact_type: 'FILE',
    artifact_uid: artifactUids[0],
    created_at: artifacts[0]!.created_at,
    data: {
      content_type: 'text/plain',
      download_url: expect.stringMatching(
        new RegExp(`^${ctx.baseUrl}/downloads/artifacts/${artifactUids[0]}\\?expires=\\d+&signature=[\\w-]{43}$`),
      ),
      expires_at: expect.any(String),
      filename: 'report.txt',
      filepath: 'out/report.txt',
      size_bytes: 15,
      description: 'The report',
      title: 'Report',
    },
  });
  const expiresIn = Date.parse(body.data.expires_at) - Date.now();
  expect(expiresIn).toBeGreaterThan((ctx.config.downloadUrlTtlSeconds - 5) * 1000);
  expect(expiresIn).toBeLessThanOrEqual((ctx.config.downloadUrlTtlSeconds + 1) * 1000);

  const text = await download(body.data.download_url);
  expect(text.status).toBe(200);
  expect(text.bytes.toString('utf8')).toBe('hello artifact\n');
  const binaryUrl = (
    (await ctx.api.get(`/api/v1/agent/artifacts/${artifactUids[1]}`).set(auth(key))).body as ArtifactResponse
  ).data.download_url;
  const binary = await download(binaryUrl);
  expect(binary.status).toBe(200);
  expect(binary.type).toBe('application/octet-stream');
  expect(binary.bytes.equals(BINARY)).toBe(true);

  uploaded = { key, runId, artifactUids };
});

test('a tampered or expired download URL is refused with a clear 403; another team gets 404', async () => {
  const { key, artifactUids } = uploaded;
  const [uid] = artifactUids;
  const url = ((await ctx.api.get(`/api/v1/agent/artifacts/${uid}`).set(auth(key))).body as ArtifactResponse).data
    .download_url;

  const sig = /signature=([\w-]+)/.exec(url)![1]!;
  const flipped = `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`;
  const tampered = await download(url.replace(sig, flipped));
  expect(tampered.status).toBe(403);
  expect(tampered.body).toMatchObject({
    error_code: 'not_authorized',
    detail: expect.stringMatching(/signature is not valid/),
  });
  // A longer validity with the same signature is tampering too.
  const extended = await download(url.replace(/expires=(\d+)/, (_m, e: string) => `expires=${Number(e) + 3600}`));
  expect(extended.status).toBe(403);
  // Another artifact's id under this signature.
  expect((await download(url.replace(uid!, artifactUids[1]!))).status).toBe(403);
  const unsigned = await download(url.split('?')[0]!);
  expect(unsigned.status).toBe(403);
  expect(unsigned.body).toMatchObject({ detail: expect.stringMatching(/`expires` and `signature`/) });

  // The same service with DOWNLOAD_URL_TTL_SECONDS=1 issues URLs that expire a second later.
  const shortLived = createApp({
    config: { ...ctx.config, downloadUrlTtlSeconds: 1 },
    dataSource: ctx.dataSource,
    temporalClient: ctx.client,
    temporalConnection: ctx.connection,
    logger: createLogger('error', 'test'),
    objectStore: ctx.objectStore,
  });
  const short = (
    (await supertest(shortLived.callback()).get(`/api/v1/agent/artifacts/${uid}`).set(auth(key)))
      .body as ArtifactResponse
  ).data;
  expect(Date.parse(short.expires_at) - Date.now()).toBeLessThanOrEqual(2000);
  await new Promise((resolve) => setTimeout(resolve, Date.parse(short.expires_at) - Date.now() + 200));
  const expired = await download(short.download_url);
  expect(expired.status).toBe(403);
  expect(expired.body).toMatchObject({
    error_code: 'not_authorized',
    detail: expect.stringMatching(new RegExp(`expired at .*GET /api/v1/agent/artifacts/${uid}`)),
  });
  // The long-lived URL still works.
  expect((await download(url)).status).toBe(200);

  const other = await ctx.newTeamKey();
  const foreign = await ctx.api.get(`/api/v1/agent/artifacts/${uid}`).set(auth(other.key));
  expect(foreign.status).toBe(404);
  expect(
    (await ctx.api.get(`/api/v1/agent/runs/${uploaded.runId}/handoff/attachments`).set(auth(other.key))).status,
  ).toBe(404);
  expect((await ctx.api.get('/api/v1/agent/artifacts/not-a-uuid').set(auth(key))).status).toBe(404);
  expect((await ctx.api.get(`/api/v1/agent/artifacts/${uid}`)).status).toBe(401);
});

test('the artifact_type filter lists the runs with artifacts of that type', async () => {
  const { key, runId } = uploaded;
  const plain = await createRun(ctx, key, { prompt: `No artifacts ${uniqueName('plain')}` });
  await waitForState(ctx, key, plain, ['SUCCEEDED']);
  const ids = async (query: Record<string, string>) => {
    const res = await ctx.api.get('/api/v1/agent/runs').query(query).set(auth(key));
    expect(res.status).toBe(200);
    return (res.body as { runs: { run_id: string }[] }).runs.map((r) => r.run_id);
  };
  expect(await ids({ artifact_type: 'FILE' })).toEqual([runId]);
  expect(await ids({ artifact_type: 'PLAN' })).toEqual([]);
  expect((await ids({})).sort()).toEqual([runId, plain].sort());
  const bad = await ctx.api.get('/api/v1/agent/runs').query({ artifact_type: 'VIDEO' }).set(auth(key));
  expect(bad.status).toBe(400);
  expect((bad.body as { detail: string }).detail).toMatch(/`artifact_type` must be one of .*FILE/);
});

test('recording an artifact again for the same tool call (a retried step) returns the first one', async () => {
  const { runId } = uploaded;
  const record = () =>
    recordFileArtifact(ctx.dataSource, objectBlobStore(ctx.objectStore), {
      runId,
      toolCallKey: 'tool-t9-s0-c0',
      filepath: 'again.txt',
      filename: 'again.txt',
      mimeType: 'text/plain',
      bytes: Buffer.from('again'),
    });
  const first = await record();
  const second = await record();
  expect(second.artifactUid).toBe(first.artifactUid);
  const [{ artifacts, blobs }] = (await ctx.dataSource.query(
    `SELECT (SELECT count(*)::int FROM artifacts WHERE run_id = $1 AND tool_call_key = 'tool-t9-s0-c0') AS artifacts,
            (SELECT count(*)::int FROM blobs b JOIN artifacts a ON a.blob_id = b.blob_id
              WHERE a.run_id = $1 AND a.tool_call_key = 'tool-t9-s0-c0') AS blobs`,
    [runId],
  )) as [{ artifacts: number; blobs: number }];
  expect({ artifacts, blobs }).toEqual({ artifacts: 1, blobs: 1 });
  await ctx.dataSource.query(`DELETE FROM blobs WHERE blob_id = $1`, [first.blobId]);
});

test("the files' bytes are objects under their content key: PostgreSQL keeps the key, identical bytes are one object", async () => {
  const { runId } = uploaded;
  const rows = (await ctx.dataSource.query(
    `SELECT b.object_key, b.content, b.sha256, b.size_bytes FROM blobs b
      WHERE b.blob_id IN (SELECT blob_id FROM artifacts WHERE run_id = $1 AND tool_call_key NOT LIKE 'again-%'
                          UNION SELECT blob_id FROM handoff_attachments WHERE run_id = $1)`,
    [runId],
  )) as { object_key: string; content: Buffer | null; sha256: string; size_bytes: string }[];
  // The two artifacts and the handoff patch.
  expect(rows).toHaveLength(3);
  for (const row of rows) {
    expect(row.content).toBeNull();
    expect(row.object_key).toBe(`sha256/${row.sha256.slice(0, 2)}/${row.sha256}`);
    const bytes = await ctx.objectStore.get(row.object_key);
    expect(bytes?.length).toBe(Number(row.size_bytes));
  }
  expect(rows.map((r) => r.object_key)).toContain(contentKey(Buffer.from('hello artifact\n')));

  const blobs = objectBlobStore(ctx.objectStore);
  const same = Buffer.from(`the same bytes ${uniqueName('twice')}`);
  const record = (toolCallKey: string) =>
    recordFileArtifact(ctx.dataSource, blobs, {
      runId,
      toolCallKey,
      filepath: 'same.txt',
      filename: 'same.txt',
      mimeType: 'text/plain',
      bytes: same,
    });
  const [one, two] = [await record('again-1'), await record('again-2')];
  expect(one.artifactUid).not.toBe(two.artifactUid);
  const keys = (await ctx.dataSource.query(`SELECT object_key FROM blobs WHERE blob_id = ANY($1::uuid[])`, [
    [one.blobId, two.blobId],
  ])) as { object_key: string }[];
  expect(keys.map((k) => k.object_key)).toEqual([contentKey(same), contentKey(same)]);
  const objects: string[] = [];
  for await (const object of ctx.objectStore.list(contentKey(same))) objects.push(object.key);
  expect(objects).toEqual([contentKey(same)]);
  await ctx.dataSource.query(`DELETE FROM blobs WHERE blob_id = ANY($1::uuid[])`, [[one.blobId, two.blobId]]);
});

test('a file stored before the object store (its bytes in PostgreSQL) still downloads; one whose object is gone is 404', async () => {
  const { key, runId } = uploaded;
  const legacy = Buffer.from([0, 9, 8, 7, 255]);
  const missing = Buffer.from(`never written ${uniqueName('gone')}`);
  const blobOf = async (content: Buffer | null, objectKey: string | null) =>
    (
      (await ctx.dataSource.query(
        `INSERT INTO blobs (blob_id, run_id, size_bytes, sha256, content, object_key)
         VALUES (gen_random_uuid(), $1, 5, 'x', $2, $3) RETURNING blob_id`,
        [runId, content, objectKey],
      )) as { blob_id: string }[]
    )[0]!.blob_id;
  const oldBlob = await blobOf(legacy, null);
  const goneBlob = await blobOf(null, contentKey(missing));
  const artifactOf = async (blobId: string, name: string) =>
    (
      (await ctx.dataSource.query(
        `INSERT INTO artifacts (artifact_uid, run_id, team_id, tool_call_key, artifact_type, filepath, filename,
                                mime_type, size_bytes, blob_id)
         SELECT gen_random_uuid(), run_id, team_id, $2, 'FILE', $3, $3, 'application/octet-stream', 5, $4
           FROM runs WHERE run_id = $1
         RETURNING artifact_uid`,
        [runId, `legacy-${name}`, name, blobId],
      )) as { artifact_uid: string }[]
    )[0]!.artifact_uid;
  const urlOf = async (uid: string) =>
    ((await ctx.api.get(`/api/v1/agent/artifacts/${uid}`).set(auth(key))).body as ArtifactResponse).data.download_url;
  const old = await download(await urlOf(await artifactOf(oldBlob, 'old.bin')));
  expect(old.status).toBe(200);
  expect(old.bytes.equals(legacy)).toBe(true);
  const gone = await download(await urlOf(await artifactOf(goneBlob, 'gone.bin')));
  expect(gone.status).toBe(404);
  expect(gone.body).toMatchObject({ detail: 'The file is no longer stored.' });
  await ctx.dataSource.query(`DELETE FROM blobs WHERE blob_id = ANY($1::uuid[])`, [[oldBlob, goneBlob]]);
});

test('handoff attachments: a patch of what the agent changed, downloadable with a signed URL', async () => {
  const { key, runId } = uploaded;
  const res = await ctx.api.get(`/api/v1/agent/runs/${runId}/handoff/attachments`).set(auth(key));
  expect(res.status).toBe(200);
  const { attachments } = res.body as {
    attachments: { attachment_id: string; filename: string; mime_type: string; download_url: string }[];
  };
  expect(attachments).toEqual([
    {
      attachment_id: expect.any(String),
      filename: 'workspace.patch',
      mime_type: 'text/x-diff',
      download_url: expect.stringMatching(/\/downloads\/handoff\/[0-9a-f-]{36}\?expires=\d+&signature=[\w-]{43}$/),
    },
  ]);
  const patch = await download(attachments[0]!.download_url);
  expect(patch.status).toBe(200);
  const text = patch.bytes.toString('utf8');
  expect(text).toContain('diff --git a/out/report.txt b/out/report.txt');
  expect(text).toContain('+hello artifact');
  expect(text).toContain('GIT binary patch');

  // It applies where the workspace started: an empty repository.
  const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'handoff-'));
  try {
    execFileSync('git', ['init', '--quiet'], { cwd: elsewhere });
    writeFileSync(path.join(elsewhere, 'workspace.patch'), patch.bytes);
    execFileSync('git', ['apply', 'workspace.patch'], { cwd: elsewhere });
    expect(readFileSync(path.join(elsewhere, 'out/report.txt'), 'utf8')).toBe('hello artifact\n');
    expect(readFileSync(path.join(elsewhere, 'out/data.bin')).equals(BINARY)).toBe(true);
  } finally {
    rmSync(elsewhere, { recursive: true, force: true });
  }

  const sig = /signature=([\w-]+)/.exec(attachments[0]!.download_url)![1]!;
  const tampered = attachments[0]!.download_url.replace(sig, `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`);
  expect((await download(tampered)).status).toBe(403);
});

test('an upload of a path outside the workspace, or through a symlink out of it, is a tool error', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('escape');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return {
        text: '',
        toolCalls: [
          {
            name: 'run_command',
            arguments: { command: 'ln -s /usr/bin/env leak.txt && mkdir -p d && ln -s / d/root' },
          },
        ],
      };
    if (call === 2)
      return {
        text: '',
        toolCalls: [
          { name: 'upload_artifact', arguments: { filepath: '../outside.txt' } },
          { name: 'upload_artifact', arguments: { filepath: '/etc/passwd' } },
          { name: 'upload_artifact', arguments: { filepath: 'leak.txt' } },
          { name: 'upload_artifact', arguments: { filepath: 'd/root/etc/passwd' } },
          { name: 'upload_artifact', arguments: { filepath: 'missing.txt' } },
          { name: 'upload_artifact', arguments: { filepath: 'd' } },
        ],
      };
    return { text: 'Could not.' };
  });
  const runId = await createRun(ctx, key, { prompt: `Leak it ${marker}` });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.artifacts).toEqual([]);
  const results = (await transcript(ctx, runId)).filter(
    (e) => e.kind === 'tool_call' && e.payload.name === 'upload_artifact',
  );
  expect(results.map((e) => [e.payload.is_error, e.payload.output])).toEqual([
    [true, expect.stringMatching(/^upload_artifact failed: \.\.\/outside\.txt is outside the workspace/)],
    [true, expect.stringMatching(/^upload_artifact failed: \/etc\/passwd is outside the workspace/)],
    [true, expect.stringMatching(/^upload_artifact failed: leak\.txt leads outside the workspace/)],
    [true, expect.stringMatching(/^upload_artifact failed: d\/root\/etc\/passwd leads outside the workspace/)],
    [true, expect.stringMatching(/^upload_artifact failed: no such file or directory/)],
    [true, expect.stringMatching(/^upload_artifact failed: d is not a regular file/)],
  ]);
  const [{ count }] = (await ctx.dataSource.query(`SELECT count(*)::int AS count FROM artifacts WHERE run_id = $1`, [
    runId,
  ])) as [{ count: number }];
  expect(count).toBe(0);
});

test('attachments on create are written into the workspace and named in the first message', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('attach');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return { text: '', toolCalls: [{ name: 'read_file', arguments: { path: 'attachments/notes.txt' } }] };
    return { text: 'Read it.' };
  });
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
  const runId = await createRun(ctx, key, {
    prompt: `Read the notes ${marker}`,
    attachments: [
      {
        data: Buffer.from('the attached notes\n').toString('base64'),
        file_name: '../../notes.txt',
        mime_type: 'text/plain',
      },
      { data: png.toString('base64'), file_name: 'pic.png', mime_type: 'image/png' },
      { data: Buffer.from('second').toString('base64'), file_name: 'sub/notes.txt', mime_type: 'text/plain' },
    ],
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const first = ctx.model.calls(marker)[0]!.messages.find((m) => m.role === 'user')!.content;
  expect(first).toContain(`Read the notes ${marker}`);
  expect(first).toContain('attachments/notes.txt (text/plain, 19 bytes)');
  expect(first).toContain('attachments/pic.png (image/png, 12 bytes)');
  expect(first).toContain('attachments/notes-2.txt (text/plain, 6 bytes)');
  expect(ctx.model.calls(marker)[1]!.messages.find((m) => m.role === 'tool')?.content).toBe('the attached notes\n');

  const dir = path.join(workspaceOf(runId), 'attachments');
  expect(readFileSync(path.join(dir, 'notes.txt'), 'utf8')).toBe('the attached notes\n');
  expect(readFileSync(path.join(dir, 'pic.png')).equals(png)).toBe(true);
  expect(readFileSync(path.join(dir, 'notes-2.txt'), 'utf8')).toBe('second');
  // Nothing the agent changed: the attachments are not part of the handoff patch.
  const handoff = await ctx.api.get(`/api/v1/agent/runs/${runId}/handoff/attachments`).set(auth(key));
  expect(handoff.body).toEqual({ attachments: [] });
  // The data is stored with the run, never echoed back.
  expect(JSON.stringify(await getRun(ctx, key, runId))).not.toContain(png.toString('base64'));
});

test('too many, too big or malformed attachments are 400 naming the field; nothing is created', async () => {
  const { key } = await ctx.newTeamKey();
  const one = { data: Buffer.from('x').toString('base64'), file_name: 'x.txt', mime_type: 'text/plain' };
  const cases: [unknown[], RegExp][] = [
    [Array.from({ length: 6 }, () => one), /`attachments`: at most 5 attachments/],
    [
      [{ ...one, data: Buffer.alloc(MAX_ATTACHMENT_BYTES + 1).toString('base64') }],
      new RegExp(`\`attachments.0.data\`: the file is larger than the limit of ${MAX_ATTACHMENT_BYTES} bytes`),
    ],
    [[one, { ...one, data: 'not base64!' }], /`attachments.1.data`: must be standard base64/],
    [[{ ...one, data: 'abc' }], /`attachments.0.data`: must be standard base64/],
    [[{ data: one.data, mime_type: 'text/plain' }], /`attachments.0.file_name` is required/],
    [[{ ...one, mime_type: 'text' }], /`attachments.0.mime_type`: must be a MIME type/],
    [
      // 3 × 3.5 MiB: each within its own limit, together above 10 MiB (and the body within 16 MiB).
      [1, 2, 3].map(() => ({ ...one, data: Buffer.alloc(3.5 * 1024 * 1024).toString('base64') })),
      /`attachments`: the attachments add up to \d+ bytes, above the limit of \d+ bytes in all/,
    ],
  ];
  for (const [attachments, detail] of cases) {
    const res = await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: 'with attachments', attachments });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'invalid_request', detail: expect.stringMatching(detail) });
  }
  const list = await ctx.api.get('/api/v1/agent/runs').set(auth(key));
  expect((list.body as { runs: unknown[] }).runs).toEqual([]);
});
