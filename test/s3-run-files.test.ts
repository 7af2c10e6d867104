import path from 'node:path';
import { DirectoryObjectStore } from '../infra/object-store/directory-store';
import { createObjectStore } from '../infra/object-store/create-object-store';
import { contentKey } from '../infra/object-store/object-store';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** A service whose object store is the test run's S3 server (Versity Gateway), under the prefix `agent-runs`. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ objectStore: 's3' });
});
afterAll(async () => {
  await ctx?.close();
});

async function download(url: string): Promise<{ status: number; bytes: Buffer }> {
  const res = await fetch(url);
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
}

test("with OBJECT_STORE=s3 a run's attachment, artifact and handoff patch go through the bucket and download whole", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('s3-files');
  const notes = Buffer.from(`attached ${marker}\n`);
  const report = `report of ${marker}\n`;
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return {
        text: '',
        toolCalls: [
          { name: 'read_file', arguments: { path: 'attachments/notes.txt' } },
          { name: 'write_file', arguments: { path: 'out/report.txt', content: report } },
        ],
      };
    if (call === 2)
      return { text: '', toolCalls: [{ name: 'upload_artifact', arguments: { filepath: 'out/report.txt' } }] };
    return { text: 'Done.' };
  });
  const runId = await createRun(ctx, key, {
    prompt: `Report ${marker}`,
    attachments: [{ data: notes.toString('base64'), file_name: 'notes.txt', mime_type: 'text/plain' }],
  });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  // The attachment came back from the bucket into the workspace.
  expect(ctx.model.calls(marker)[1]!.messages.find((m) => m.role === 'tool')?.content).toBe(notes.toString());

  const [artifact] = run.artifacts as { data: { artifact_uid: string } }[];
  const got = await ctx.api.get(`/api/v1/agent/artifacts/${artifact!.data.artifact_uid}`).set(auth(key));
  const fromArtifact = await download((got.body as { data: { download_url: string } }).data.download_url);
  expect(fromArtifact).toEqual({ status: 200, bytes: Buffer.from(report) });
  const handoff = await ctx.api.get(`/api/v1/agent/runs/${runId}/handoff/attachments`).set(auth(key));
  const [patch] = (handoff.body as { attachments: { download_url: string }[] }).attachments;
  const fromPatch = await download(patch!.download_url);
  expect(fromPatch.status).toBe(200);
  expect(fromPatch.bytes.toString()).toContain(`+${report.trim()}`);

  // Each file is an object in the bucket under the prefix, and none in the test run's directory store.
  const rows = (await ctx.dataSource.query(`SELECT object_key, content FROM blobs WHERE run_id = $1`, [runId])) as {
    object_key: string;
    content: Buffer | null;
  }[];
  expect(rows.map((r) => r.object_key).sort()).toEqual(
    [contentKey(notes), contentKey(Buffer.from(report)), contentKey(fromPatch.bytes)].sort(),
  );
  expect(rows.every((r) => r.content === null)).toBe(true);
  const { accessKeyId, secretAccessKey } = ctx.stack.s3;
  const bucket = createObjectStore({ ...ctx.config.objectStore, prefix: undefined } as typeof ctx.config.objectStore, {
    credentials: { accessKeyId, secretAccessKey },
  });
  const directory = new DirectoryObjectStore(path.join(ctx.stack.dataDir, 'objects'));
  for (const { object_key } of rows) {
    expect(await bucket.has(`agent-runs/${object_key}`)).toBe(true);
    expect(await directory.has(object_key)).toBe(false);
  }
  // The run's record says nothing of where the bytes are.
  expect(JSON.stringify(await getRun(ctx, key, runId))).not.toContain('sha256/');
});
