import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureSchemathesis, SCHEMATHESIS } from '../infra/schemathesis';
import { locateTemporalCli } from '../infra/temporal-cli';
import { startTemporalDevServer, type RunningDevServer } from '../infra/temporal-dev-server';
import { freePort } from './helpers/free-port';
import { auth, createRun, waitForState } from './helpers/runs';
import { WebhookReceiver } from './helpers/webhook-receiver';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

const run = promisify(execFile);

/** Test cases per operation and phase: the whole run stays within a few minutes. */
const MAX_EXAMPLES = 15;

/**
 * schemathesis against the test stack, with all its checks, over every operation of
 * `/api/v1/openapi.json`, authenticated with a team key: no 5xx, every status, content type and
 * header documented, every response conforming to its schema, schema-valid requests accepted and
 * invalid ones refused. Deterministic generation, so CI sees the same cases every time.
 *
 * The fuzzer's runs are recorded and their workflows started, but no worker executes them: the
 * values it makes up (MCP server URLs, repositories of any owner) must not make this machine
 * connect anywhere. Runs that did execute, with a transcript and an artifact, are made first.
 */
let ctx: TestContext;
let schemathesis: string;
let workDir: string;
let temporal: RunningDevServer | undefined;
/** What the fuzzer's webhooks subscribe (hooks.py): the one private address the stack may reach. */
const receiver = new WebhookReceiver();
let webhookUrl: string;
beforeAll(async () => {
  schemathesis = await ensureSchemathesis();
  workDir = mkdtempSync(path.join(os.tmpdir(), 'schemathesis-'));
  // A Temporal server of its own: the every-minute schedules the fuzzer creates keep a scheduler
  // busy at each minute, which must not slow the other test files' schedules.
  temporal = await startTemporalDevServer({
    source: await locateTemporalCli({ say: () => undefined }),
    namespace: 'default',
    port: await freePort(),
    uiPort: await freePort(),
    httpPort: await freePort(),
    metricsPort: await freePort(),
    ui: false,
    logFile: path.join(workDir, 'temporal.log'),
  });
  webhookUrl = await receiver.start();
  ctx = await createTestContext({
    temporalAddress: temporal.address,
    env: {
      GIT_BASE_URL: `file://${workDir}/no-repositories`,
      OUTBOUND_ALLOWED_PRIVATE_HOSTS: new URL(webhookUrl).host,
      // Every-minute schedules the fuzzer creates keep the dev server's scheduler busy at each
      // minute; describing them then takes longer than the default 5 s of a production cluster.
      TEMPORAL_RPC_TIMEOUT_SECONDS: '20',
      // Pings every second: a stream the fuzzer reads for its 3 s (schemathesis.toml) carries some.
      SSE_HEARTBEAT_SECONDS: '1',
    },
  });
}, 360_000);
afterAll(async () => {
  await ctx?.close();
  await temporal?.stop();
  await receiver.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

/** Deletes the team's schedules, so that their firings stop loading the shared Temporal server. */
async function deleteSchedules(key: string): Promise<void> {
  const list = await ctx.api.get('/api/v1/agent/schedules').set(auth(key));
  for (const { id } of (list.body.schedules ?? []) as { id: string }[]) {
    await ctx.api.delete(`/api/v1/agent/schedules/${id}`).set(auth(key));
  }
}

test(`${SCHEMATHESIS} finds no failure in any operation`, async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  // Executed runs for the lists and the conversation the fuzzer reads: a plain answer, and one
  // that wrote a file and uploaded it as an artifact.
  const marker = uniqueName('st-work');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'write_file', arguments: { path: 'notes.txt', content: 'notes\n' } },
            { name: 'upload_artifact', arguments: { filepath: 'notes.txt', title: 'Notes' } },
          ],
        }
      : { text: `done ${marker}` },
  );
  const runs = [
    await createRun(ctx, key, { prompt: `Work ${marker}`, title: 'Seeded work', metadata: { seeded: 'yes' } }),
    await createRun(ctx, key, { prompt: 'Say hello.' }),
  ];
  for (const runId of runs) await waitForState(ctx, key, runId, ['SUCCEEDED']);
  await ctx.stopWorker();

  let output: string;
  let failed = false;
  try {
    const result = await run(
      schemathesis,
      [
        '--config-file',
        path.join(__dirname, 'schemathesis', 'schemathesis.toml'),
        'run',
        `${ctx.baseUrl}/api/v1/openapi.json`,
        '--checks',
        'all',
        '--header',
        `Authorization: Bearer ${key}`,
        '--max-examples',
        String(MAX_EXAMPLES),
        // Derandomized (which also keeps no example database): the same cases on every run.
        '--generation-deterministic',
        '--workers',
        '1',
        '--request-timeout',
        '30',
        '--no-color',
      ],
      {
        cwd: workDir,
        env: {
          ...process.env,
          PYTHONPATH: path.join(__dirname, 'schemathesis'),
          SCHEMATHESIS_HOOKS: 'hooks',
          SCHEMATHESIS_WEBHOOK_URL: webhookUrl,
        },
        timeout: 900_000,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    output = result.stdout;
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    output = `${stdout ?? ''}\n${stderr ?? ''}`;
    failed = true;
  } finally {
    await deleteSchedules(key);
  }
  const summary =
    output
      .trim()
      .split('\n')
      .filter((line) => /^=+ .* =+$/.test(line))
      .pop() ?? '(no summary)';
  process.stdout.write(`schemathesis: ${summary}\n${warningsOf(output)}`);
  if (failed) throw new Error(`schemathesis found failures:\n${output}`);
  expect(output).toMatch(/Selected: (\d+)\/\1/);
  expect(output).not.toMatch(/Failures:/);
  expect(summary).toMatch(/in [\d.]+s/);
}, 900_000);

/** schemathesis's WARNINGS section (operations it could not exercise fully), for the log. */
function warningsOf(output: string): string {
  const lines = output.split('\n');
  const start = lines.findIndex((line) => /^=+ WARNINGS =+$/.test(line));
  if (start < 0) return '';
  const end = lines.findIndex((line, i) => i > start && /^=+ .* =+$/.test(line));
  return `${lines.slice(start, end < 0 ? undefined : end).join('\n')}\n`;
}
