import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createEnvironment } from './helpers/environments';
import {
  busyboxFiles,
  missingImageTools,
  pushImage,
  startRegistry,
  type LocalRegistry,
} from './helpers/image-registry';
import { createRun, transcript, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { killWorker, spawnWorker, within, type WorkerChild } from './helpers/worker-processes';

/**
 * A worker SIGKILLed in the middle of an image pull: the provisioning is tried again on another
 * worker of the machine, which pulls the image whole (nothing half-written is trusted) and the
 * run finishes on it.
 */
let ctx: TestContext;
let registry: LocalRegistry;
let proxy: http.Server;
let proxyHost: string;
const workers: WorkerChild[] = [];
/** The first layer download waits here until the test lets it go. */
const held = gate<void>();
const blobRequested = gate<void>();
let holding = true;

beforeAll(async () => {
  expect(missingImageTools()).toEqual([]);
  registry = await startRegistry();
  // In front of the registry: holds the first layer download, so the pull is surely under way when the worker dies.
  proxy = http.createServer((req, res) => {
    const forward = () => {
      const upstream = http.request(
        `http://${registry.host}${req.url}`,
        { method: req.method, headers: { ...req.headers, host: registry.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (holding && req.method === 'GET' && /\/blobs\/sha256:/.test(req.url ?? '')) {
      holding = false;
      blobRequested.release();
      void held.promise.then(forward);
    } else forward();
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyHost = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  ctx = await createTestContext({
    worker: false,
    env: { ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3', IMAGE_INSECURE_REGISTRIES: proxyHost },
  });
});
afterAll(async () => {
  for (const w of workers) await killWorker(w);
  await ctx?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await registry?.stop();
});

jest.setTimeout(180_000);

/** Host pids of skopeo processes pulling into `cacheDir`. */
function skopeoPulls(cacheDir: string): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      return argv[0]?.endsWith('skopeo') && argv.some((arg) => arg.includes(cacheDir)) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

test('a worker SIGKILLed mid-pull: another worker pulls the image whole and the run finishes on it', async () => {
  const digest = await pushImage(`${registry.host}/crash/busy:v1`, busyboxFiles('marker-crash'));
  const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-images-'));
  const env = { IMAGE_CACHE_DIR: cacheDir, IMAGE_INSECURE_REGISTRIES: proxyHost };
  const first = spawnWorker(ctx, { workspaceDir: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-')), env });
  workers.push(first);

  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'crash', docker_image: `${proxyHost}/crash/busy:v1` });
  const marker = uniqueName('crash');
  ctx.model.script(marker, (req, call) => {
    if (call === 1) return { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'cat /marker' } }] };
    return { text: `Saw: ${req.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''}` };
  });
  const runId = await createRun(ctx, key, { prompt: `Pull ${marker}`, config: { environment_id: envId } });

  await within(blobRequested.promise, 120_000, 'the first worker to start downloading a layer', first);
  // The download in flight: skopeo, in its tool sandbox, writing into this cache.
  expect(skopeoPulls(cacheDir).length).toBeGreaterThan(0);
  await killWorker(first);
  // It dies with its worker (the layer it waits for is still held back): nothing is left downloading.
  await waitFor(
    async () => skopeoPulls(cacheDir),
    (pids) => pids.length === 0,
    "the dead worker's skopeo to die",
    10_000,
  );
  held.release();

  const second = spawnWorker(ctx, { workspaceDir: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-')), env });
  workers.push(second);
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(String((run.status_message as { message: string }).message)).toContain('marker-crash');

  const notices = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'notice')
    .map((e) => String(e.payload.message))
    .join('\n');
  // The dead worker's attempt said it was pulling; the next one pulled again and used it.
  expect(notices.match(/Pulling /g)?.length).toBe(2);
  expect(notices).toContain(`is ${digest}`);
  expect(readdirSync(path.join(cacheDir, 'entries'))).toEqual([digest.slice('sha256:'.length)]);
  expect(readdirSync(path.join(cacheDir, 'staging'))).toEqual([]);
});
