import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawnApi, type ApiChild } from './helpers/api-processes';
import { startGrpcTlsProxy, type GrpcTlsProxy } from './helpers/grpc-tls-proxy';
import { makeTestCertificates, type TestCertificates } from './helpers/test-certificates';
import { auth, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { killWorker, spawnWorker, waitUntilPolling, type WorkerChild } from './helpers/worker-processes';

/**
 * A secured Temporal, as production has one: the test stack's dev server behind nginx, which
 * terminates TLS for gRPC on two ports, one wanting a client certificate of the test CA (mTLS),
 * the other an API key. An API process and a worker process that know only the proxy's address
 * run runs through each; wrong or missing credentials stop a process at start, saying which
 * setting to fix.
 */
jest.setTimeout(300_000);

const API_KEY = 'temporal-test-api-key-7f3a9c';
let ctx: TestContext;
let certs: TestCertificates;
let proxy: GrpcTlsProxy;
const apis: ApiChild[] = [];
const workers: WorkerChild[] = [];

beforeAll(async () => {
  ctx = await createTestContext({ worker: false });
  certs = makeTestCertificates();
  proxy = await startGrpcTlsProxy(certs, ctx.stack.temporalAddress, API_KEY);
});
afterAll(async () => {
  for (const w of workers) await killWorker(w);
  for (const a of apis) if (a.proc.exitCode === null) a.proc.kill('SIGKILL');
  await proxy?.stop();
  await ctx?.close();
});

/** Runs one run through an API process and a worker process, both configured by `env` only. */
async function runThrough(env: Record<string, string>, what: string): Promise<void> {
  const worker = spawnWorker(ctx, { env });
  workers.push(worker);
  await waitUntilPolling(ctx, worker, `the worker over ${what}`);
  const api = await spawnApi(ctx, env);
  apis.push(api);
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('tls');
  ctx.model.script(marker, () => ({ text: `done over ${what}` }));
  const res = await fetch(`${api.baseUrl}/api/v1/agent/runs`, {
    method: 'POST',
    headers: { ...auth(key), 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: `Say done ${marker}`, config: { idle_timeout_minutes: 0 } }),
  });
  expect(res.status).toBe(201);
  const { run_id } = (await res.json()) as { run_id: string };
  await waitForState(ctx, key, run_id, ['SUCCEEDED'], undefined, 120_000);
  // Read back through the API process, whose only Temporal is the proxy.
  const read = await fetch(`${api.baseUrl}/api/v1/agent/runs/${run_id}`, { headers: auth(key) });
  expect(((await read.json()) as { state: string }).state).toBe('SUCCEEDED');
  await killWorker(worker);
  api.proc.kill('SIGKILL');
}

/** The worker's exit and what it said, when it cannot start; how long it took. */
async function failedStart(env: Record<string, string>): Promise<{ code: number | null; output: string; ms: number }> {
  const worker = spawnWorker(ctx, { env });
  workers.push(worker);
  const { code } = await worker.exited;
  return { code, output: worker.output.join(''), ms: Date.now() - worker.spawnedAt };
}

test('mTLS through nginx: an API and a worker that know only the proxy run a run', async () => {
  await runThrough(
    {
      TEMPORAL_ADDRESS: proxy.mtlsAddress,
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caCert,
      TEMPORAL_TLS_SERVER_NAME: certs.serverName,
    },
    'mTLS',
  );
  const port = proxy.mtlsAddress.split(':')[1]!;
  expect(proxy.requests()).toMatch(
    new RegExp(`^${port} 200 POST /temporal.api.workflowservice.v1.WorkflowService/StartWorkflowExecution`, 'm'),
  );
  expect(proxy.requests()).toMatch(
    new RegExp(`^${port} 200 POST /temporal.api.workflowservice.v1.WorkflowService/PollActivityTaskQueue`, 'm'),
  );
});

test('TLS and an API key from a TOML profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE), as the temporal CLI reads it', async () => {
  const file = path.join(certs.dir, 'temporal.toml');
  writeFileSync(
    file,
    [
      '[profile.default]',
      'address = "127.0.0.1:1"',
      '',
      '[profile.secured]',
      `address = "${proxy.apiKeyAddress}"`,
      `namespace = "${ctx.config.temporal.namespace}"`,
      `api_key = "${API_KEY}"`,
      '[profile.secured.tls]',
      `server_ca_cert_path = "${certs.caCert}"`,
      `server_name = "${certs.serverName}"`,
      '',
    ].join('\n'),
  );
  // No TEMPORAL_ADDRESS: the profile's address is the only one.
  await runThrough({ TEMPORAL_ADDRESS: '', TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'secured' }, 'TLS + API key');
  const port = proxy.apiKeyAddress.split(':')[1]!;
  expect(proxy.requests()).toMatch(
    new RegExp(`^${port} 200 POST /temporal.api.workflowservice.v1.WorkflowService/StartWorkflowExecution`, 'm'),
  );
  expect(proxy.requests()).not.toMatch(new RegExp(`^${port} 401 `, 'm'));
});

test('wrong or missing credentials stop a worker at start, naming TLS and the setting to fix', async () => {
  const mtls = {
    TEMPORAL_ADDRESS: proxy.mtlsAddress,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caCert,
    TEMPORAL_TLS_SERVER_NAME: certs.serverName,
  };
  const missing = path.join(certs.dir, 'no-such.crt');
  const [missingFile, stranger, wrongKey, noServerName, plaintext] = await Promise.all([
    failedStart({ ...mtls, TEMPORAL_TLS_CLIENT_CERT_PATH: missing, TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey }),
    failedStart({
      ...mtls,
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.strangerCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.strangerKey,
    }),
    failedStart({
      TEMPORAL_ADDRESS: proxy.apiKeyAddress,
      TEMPORAL_API_KEY: 'not-the-key',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caCert,
      TEMPORAL_TLS_SERVER_NAME: certs.serverName,
    }),
    failedStart({
      ...mtls,
      TEMPORAL_TLS_SERVER_NAME: '',
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
    }),
    failedStart({ TEMPORAL_ADDRESS: proxy.mtlsAddress }),
  ]);
  for (const failure of [missingFile, stranger, wrongKey, noServerName, plaintext]) expect(failure.code).toBe(1);

  expect(missingFile.output).toContain(
    `Temporal TLS: TEMPORAL_TLS_CLIENT_CERT_PATH=${missing}: cannot be read (ENOENT)`,
  );
  expect(stranger.output).toContain(`Cannot connect to Temporal at ${proxy.mtlsAddress} over mTLS`);
  expect(stranger.output).toContain(`TEMPORAL_TLS_CLIENT_CERT_PATH=${certs.strangerCert}`);
  expect(wrongKey.output).toContain(`Cannot connect to Temporal at ${proxy.apiKeyAddress} over TLS + API key`);
  expect(wrongKey.output).toContain('check TEMPORAL_API_KEY');
  expect(wrongKey.output).not.toContain('not-the-key');
  expect(noServerName.output).toContain('TLS handshake failed');
  expect(noServerName.output).toContain('TEMPORAL_TLS_SERVER_NAME');
  expect(plaintext.output).toContain('set TEMPORAL_TLS=true');
  console.log(
    `secured Temporal, a worker's failed start: missing file ${missingFile.ms} ms, stranger's certificate ${stranger.ms} ms, wrong API key ${wrongKey.ms} ms, no server name ${noServerName.ms} ms, plaintext to TLS ${plaintext.ms} ms`,
  );
});
