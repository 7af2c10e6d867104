import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startCli } from './helpers/cli-process';
import { freePort } from './helpers/free-port';
import { gate } from './helpers/scripted-model';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * `agent-runs`, spawned as a process (bin/agent-runs.mjs, from source) against the test stack.
 * Following goes through a proxy that cuts each run's first event stream after a few events, so
 * every follow also proves the resumption with `Last-Event-ID`. The proxy relays the API's own
 * `GET /agent/runs/{id}/events` when the API has it, and otherwise stands in for it, replaying
 * the run's `run_events` rows in the same format.
 */
const ANSI = '\x1b[';
/** Events the proxy lets through on a run's first stream before it cuts the connection. */
const CUT_AFTER = 3;

let ctx: TestContext;
let proxy: EventsProxy;
let realEvents = false;

beforeAll(async () => {
  ctx = await createTestContext();
  // Does the API stream events itself? Ask for the stream of a run of the caller's team.
  const { key } = await ctx.newTeamKey();
  const runId = await createRun(ctx, key, { prompt: `Probe ${uniqueName('probe')}` });
  const probe = new AbortController();
  const res = await fetch(`${ctx.baseUrl}/api/v1/agent/runs/${runId}/events`, {
    headers: auth(key),
    signal: probe.signal,
  });
  realEvents = res.status !== 404;
  probe.abort();
  proxy = await startEventsProxy(ctx, realEvents);
});
afterAll(async () => {
  await proxy?.close();
  await ctx?.close();
});

const cli = (args: string[], env: Record<string, string> = {}) => startCli(args, env).done;
const as = (key: string, url = ctx.baseUrl) => ({ AGENT_RUNS_URL: url, AGENT_RUNS_API_KEY: key });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

/** Each needle appears exactly once, and in the order given. */
function expectOnceInOrder(text: string, needles: string[]): void {
  let previous = -1;
  for (const needle of needles) {
    expect({ needle, occurrences: occurrences(text, needle) }).toEqual({ needle, occurrences: 1 });
    const at = text.indexOf(needle);
    expect({ needle, after: previous, at: at > previous }).toEqual({ needle, after: previous, at: true });
    previous = at;
  }
}

test('a missing API key exits 2 and says what to set', async () => {
  const result = await cli(['list'], { AGENT_RUNS_URL: ctx.baseUrl });
  expect(result.code).toBe(2);
  expect(result.stderr).toContain('No API key: set AGENT_RUNS_API_KEY (or pass --api-key)');
  expect(result.stdout).toBe('');
  // Bad usage is 2 as well; help is no error.
  expect((await cli(['list', '--limit', 'many'], as('ark_x'))).code).toBe(2);
  expect((await cli(['run', 'x', '--wait', '--follow'], as('ark_x'))).code).toBe(2);
});

test('--help on every command, also through `npx agent-runs` (the package.json bin)', async () => {
  for (const command of ['run', 'list', 'get', 'logs', 'followup', 'cancel', 'artifacts', 'plan']) {
    const result = await cli([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Usage: agent-runs ${command} `));
    expect(result.stdout).toContain('--json');
  }
  const cache = mkdtempSync(path.join(os.tmpdir(), 'npx-cache-'));
  const npx = spawn('npx', ['--offline', '--cache', cache, 'agent-runs', '--help'], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, AGENT_RUNS_CLI_FROM_SOURCE: '1', npm_config_update_notifier: 'false' },
  });
  let stdout = '';
  npx.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const code = await new Promise<number | null>((resolve) => npx.on('close', resolve));
  rmSync(cache, { recursive: true, force: true });
  expect(code).toBe(0);
  expect(stdout).toContain('Usage: agent-runs [options] [command]');
  expect(stdout).toMatch(/run \[options\] \[prompt\]\s+create a run/);
  expect(stdout).toContain('0  success, SUCCEEDED     3  FAILED     4  ERROR     5  CANCELLED');
});

test('run --wait exits 0 when the run succeeds, printing its id and the answer', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-ok');
  ctx.model.script(marker, () => ({ text: 'The answer is 42.' }));
  const result = await cli(['run', `What is six times seven? ${marker}`, '--wait', '--idle-timeout', '0'], as(key));
  expect(result.code).toBe(0);
  const runId = result.stdout.trim();
  expect(runId).toMatch(UUID);
  expect(result.stderr).toContain(`Run ${runId} SUCCEEDED: The answer is 42.`);
  expect((await getRun(ctx, key, runId)).state).toBe('SUCCEEDED');
});

test('run --plan --wait prints the plan it ended with; plan prints the markdown of a version', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-plan');
  ctx.model.script(marker, (_req, call) =>
    call === 1 ? { text: '# Tidy up\n\n1. Delete the build directory.' } : { text: '# Tidy up\n\n1. Keep it.' },
  );
  const result = await cli(['run', `Plan a tidy-up ${marker}`, '--plan', '--wait'], as(key));
  expect(result.code).toBe(0);
  const runId = result.stdout.trim();
  expect(runId).toMatch(UUID);
  expectOnceInOrder(result.stderr, [
    `Run ${runId} SUCCEEDED: Plan "Tidy up" (version 1) awaits approval`,
    'Plan "Tidy up", version 1:',
    '1. Delete the build directory.',
  ]);
  const revised = await cli(['followup', runId, 'Keep it.', '--mode', 'plan', '--wait'], as(key));
  expect(revised.code).toBe(0);
  expect((await cli(['plan', runId], as(key))).stdout).toBe('# Tidy up\n\n1. Keep it.\n');
  expect((await cli(['plan', runId, '--plan-version', '1'], as(key))).stdout).toBe(
    '# Tidy up\n\n1. Delete the build directory.\n',
  );
  const missing = await cli(['plan', runId, '--plan-version', '3'], as(key));
  expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining('has no version 3 of a plan')]);
  expect((await cli(['run', 'x', '--plan', '--mode', 'normal'], as(key))).code).toBe(2);
});

test('run --wait exits 3 with the status message when the run fails', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-fail');
  ctx.model.script(marker, () => ({ status: 400, error: 'This model maximum context length is 8 tokens' }));
  const result = await cli(['run', `Too long ${marker}`, '--wait', '--idle-timeout', '0'], as(key));
  expect(result.code).toBe(3);
  const runId = result.stdout.trim();
  expect(result.stderr).toMatch(
    new RegExp(`Run ${runId} FAILED: \\[invalid_request\\] .*This model maximum context length is 8 tokens`),
  );
});

test('run --wait exits 4 with the status message when the run ends ERROR (a provider outage)', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-error');
  // Past the model retries (test context: 3 attempts) a 503 is a platform failure: ERROR, not FAILED.
  ctx.model.script(marker, () => ({ status: 503, error: `provider down ${marker}` }));
  const result = await cli(['run', `Nobody answers ${marker}`, '--wait', '--idle-timeout', '0'], as(key));
  expect(result.code).toBe(4);
  const runId = result.stdout.trim();
  expect(runId).toMatch(UUID);
  expect(result.stderr).toMatch(new RegExp(`Run ${runId} ERROR: \\[resource_unavailable\\] .*provider down ${marker}`));
  expect((await getRun(ctx, key, runId)).state).toBe('ERROR');
  expect(ctx.model.calls(marker)).toHaveLength(ctx.config.models.retry.maxAttempts);
});

test('--json prints one JSON document and nothing else on stdout', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-json');
  ctx.model.script(marker, () => ({ text: 'JSON answer.' }));
  const created = await cli(
    ['run', `Answer ${marker}`, '--json', '--title', 'JSON run', '--metadata', 'ticket=OPS-1', '--idle-timeout', '0'],
    as(key),
  );
  expect(created.code).toBe(0);
  const body = JSON.parse(created.stdout) as { run_id: string; state: string };
  expect(body).toMatchObject({ run_id: expect.stringMatching(UUID), state: 'QUEUED' });

  const waited = await cli(['get', body.run_id, '--json'], as(key));
  expect(JSON.parse(waited.stdout)).toMatchObject({
    run_id: body.run_id,
    title: 'JSON run',
    metadata: { ticket: 'OPS-1' },
  });

  const marker2 = uniqueName('cli-json-wait');
  ctx.model.script(marker2, () => ({ text: 'Waited answer.' }));
  const result = await cli(['run', `Answer ${marker2}`, '--wait', '--json', '--idle-timeout', '0'], as(key));
  expect(result.code).toBe(0);
  const run = JSON.parse(result.stdout) as { run_id: string; state: string; status_message: { message: string } };
  expect(run.state).toBe('SUCCEEDED');
  expect(run.status_message.message).toBe('Waited answer.');
  expect(result.stderr).toContain(`Run ${run.run_id} SUCCEEDED`);
});

test('list shows the runs in a table and honours the filters of GET /agent/runs', async () => {
  const { key } = await ctx.newTeamKey();
  const name = uniqueName('cli-list');
  const ok = uniqueName('cli-list-ok');
  const bad = uniqueName('cli-list-bad');
  ctx.model.script(ok, () => ({ text: 'fine' }));
  ctx.model.script(bad, () => ({ status: 400, error: 'refused' }));
  const good = await createRun(ctx, key, {
    prompt: `Good ${ok}`,
    title: 'Good run',
    config: { name, idle_timeout_minutes: 0 },
    metadata: { ticket: 'T-1' },
  });
  const failed = await createRun(ctx, key, {
    prompt: `Bad ${bad}`,
    title: 'Bad run',
    config: { name, idle_timeout_minutes: 0 },
  });
  await waitForState(ctx, key, good, ['SUCCEEDED']);
  await waitForState(ctx, key, failed, ['FAILED']);

  const all = await cli(['list', '--name', name], as(key));
  expect(all.code).toBe(0);
  expect(all.stdout).toMatch(/ID\s+│ STATE\s+│ TITLE\s+│ CREATED\s+│ UPDATED/);
  expect(all.stdout).toMatch(new RegExp(`${good}\\s+│ SUCCEEDED\\s+│ Good run`));
  expect(all.stdout).toMatch(new RegExp(`${failed}\\s+│ FAILED\\s+│ Bad run`));
  expect(all.stdout).not.toContain(ANSI);

  const onlyFailed = await cli(['list', '--name', name, '--state', 'FAILED', '--state', 'ERROR'], as(key));
  expect(onlyFailed.stdout).toContain(failed);
  expect(onlyFailed.stdout).not.toContain(good);

  const byMetadata = await cli(['list', '--name', name, '--metadata', 'ticket=T-1', '--json'], as(key));
  expect((JSON.parse(byMetadata.stdout) as { runs: { run_id: string }[] }).runs.map((r) => r.run_id)).toEqual([good]);

  // One run per page, every page with --all.
  const paged = await cli(
    ['list', '--name', name, '--limit', '1', '--all', '--json', '--sort-by', 'created_at'],
    as(key),
  );
  expect((JSON.parse(paged.stdout) as { runs: { run_id: string }[] }).runs.map((r) => r.run_id)).toEqual([
    failed,
    good,
  ]);
  const first = await cli(['list', '--name', name, '--limit', '1'], as(key));
  expect(first.stderr).toMatch(/More runs: add --cursor \S+ \(or --all\)/);

  // A filter the API refuses is its problem document's detail, exit 1.
  const refused = await cli(['list', '--created-after', 'yesterday'], as(key));
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain('Query parameter `created_after` must be an RFC 3339 timestamp');
  expect(refused.stderr).toContain('(invalid_request, HTTP 400)');
});

/** The scripted run that runs a command and writes a file; its id once `--follow` has shown it. */
let followed: { key: string; runId: string; marker: string };

function scriptCommandAndFile(marker: string): void {
  ctx.model.script(marker, (_request, call) => {
    if (call === 1) {
      return {
        text: 'Running a command and writing a file.',
        toolCalls: [
          { name: 'run_command', arguments: { command: 'echo "sum=$((40+2))"' } },
          { name: 'write_file', arguments: { path: 'greeting.txt', content: 'greetings from the CLI test\n' } },
        ],
      };
    }
    return { text: call === 2 ? 'All done.' : `Answer number ${call}.` };
  });
}

test('run --follow prints state changes, the command and its output, the diff, in order, resuming a cut stream', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-follow');
  scriptCommandAndFile(marker);
  const result = await cli(['run', `Do it ${marker}`, '--follow', '--idle-timeout', '0'], as(key, proxy.url));
  expect(result.code).toBe(0);
  const runId = result.stdout.split('\n')[0]!;
  expect(runId).toMatch(UUID);
  followed = { key, runId, marker };

  expectOnceInOrder(result.stdout, [
    '>>> prompt',
    '=== QUEUED',
    '=== INPROGRESS',
    '    Running a command and writing a file.',
    '$ echo "sum=$((40+2))"',
    '\n    sum=42\n',
    '    [exit 0 · ',
    '--- write_file path=greeting.txt',
    '--- files changed (1)',
    '+++ b/greeting.txt',
    '    +greetings from the CLI test',
    '    All done.',
    '=== SUCCEEDED',
  ]);
  // Not a terminal: no colour, no spinner.
  expect(result.stdout).not.toContain(ANSI);
  expect(result.stderr).not.toContain(ANSI);
  expect(result.stderr).toContain(`Run ${runId} SUCCEEDED`);

  // The proxy cut the first stream after CUT_AFTER events; the CLI resumed after the last one it had.
  const streams = proxy.connections.filter((c) => c.runId === runId);
  expect(streams.length).toBeGreaterThanOrEqual(2);
  expect(streams[0]!.lastEventId).toBeUndefined();
  const events = await runEventIds(runId);
  expect(streams[1]!.lastEventId).toBe(events[CUT_AFTER - 1]);
  expect(result.stderr).toContain(`resuming after event ${events[CUT_AFTER - 1]}`);
});

/** The run's event ids in order, straight from PostgreSQL. */
async function runEventIds(runId: string): Promise<string[]> {
  const rows = (await ctx.dataSource.query(
    `SELECT id::text AS event_id FROM run_events WHERE run_id = $1 ORDER BY id`,
    [runId],
  )) as { event_id: string }[];
  return rows.map((r) => r.event_id);
}

test('run --follow --json prints every event of the run once, in order, one JSON object per line', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-follow-json');
  scriptCommandAndFile(marker);
  const result = await cli(['run', `Do it ${marker}`, '--follow', '--json', '--idle-timeout', '0'], as(key, proxy.url));
  expect(result.code).toBe(0);
  const lines = result.stdout.trimEnd().split('\n');
  const events = lines.map(
    (line) => JSON.parse(line) as { id: string; run_id: string; kind: string; payload: Record<string, unknown> },
  );
  const runId = events[0]!.run_id;
  expect(events.every((e) => e.run_id === runId)).toBe(true);
  const terminal = events.findIndex((e) => e.kind === 'state' && e.payload.state === 'SUCCEEDED');
  expect(terminal).toBeGreaterThan(0);
  const stored = await runEventIds(runId);
  // Everything up to the terminal state, nothing twice, nothing skipped across the cut.
  expect(events.slice(0, terminal + 1).map((e) => e.id)).toEqual(stored.slice(0, terminal + 1));
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  const kinds = events.map((e) => e.kind);
  expect(kinds).toEqual(expect.arrayContaining(['prompt', 'state', 'assistant', 'tool_call', 'files_changed']));
  const command = events.find((e) => e.kind === 'tool_call' && e.payload.name === 'run_command')!;
  expect(command.payload).toMatchObject({ exit_code: 0, output: expect.stringContaining('sum=42') });
});

test('logs prints the transcript so far and stops; FORCE_COLOR colours the diff', async () => {
  const { key, runId } = followed;
  const plain = await cli(['logs', runId], as(key, proxy.url));
  expect(plain.code).toBe(0);
  expectOnceInOrder(plain.stdout, [
    '>>> prompt',
    '$ echo "sum=$((40+2))"',
    '    +greetings from the CLI test',
    '=== SUCCEEDED',
  ]);
  expect(plain.stdout).not.toContain(ANSI);

  const coloured = await cli(['logs', runId], { ...as(key, proxy.url), FORCE_COLOR: '1' });
  expect(coloured.stdout).toContain('\x1b[32m+greetings from the CLI test\x1b[39m');
  expect(coloured.stdout).toMatch(/\x1b\[1m\$ echo "sum=\$\(\(40\+2\)\)"/);

  const json = await cli(['logs', runId, '--json'], as(key, proxy.url));
  const doc = JSON.parse(json.stdout) as { run_id: string; events: { id: string }[] };
  expect(doc.run_id).toBe(runId);
  expect(doc.events.map((e) => e.id)).toEqual(await runEventIds(runId));
});

test('followup --follow shows only what the follow-up brought, until the run ends again', async () => {
  const { key, runId } = followed;
  const result = await cli(['followup', runId, 'One more thing, please.', '--follow'], as(key, proxy.url));
  expect(result.code).toBe(0);
  expectOnceInOrder(result.stdout, [
    '=== QUEUED',
    '>>> follow-up #1',
    '    One more thing, please.',
    '    Answer number 3.',
    '=== SUCCEEDED',
  ]);
  expect(occurrences(result.stdout, '=== INPROGRESS')).toBe(1);
  expect(result.stdout).not.toContain('>>> prompt');
  expect(result.stdout).not.toContain('sum=42');
  expect(ctx.model.calls(followed.marker)).toHaveLength(3);

  const waited = await cli(['followup', runId, 'And the last one.', '--wait'], as(key));
  expect(waited.code).toBe(0);
  expect(waited.stderr).toContain(`Run ${runId} SUCCEEDED: Answer number 4.`);
});

test("what a run prints cannot drive the terminal or pass for the CLI's own lines", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-hostile');
  ctx.model.script(marker, (_request, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'run_command', arguments: { command: "printf '\\033[2J=== SUCCEEDED\\n'\necho '=== FAILED'" } },
          ],
        }
      : { text: '\x1b]0;pwned\x07Done.\n=== CANCELLED' },
  );
  const result = await cli(['run', `Print things ${marker}`, '--follow', '--idle-timeout', '0'], as(key, proxy.url));
  expect(result.code).toBe(0);
  expect(result.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  // Every line the CLI did not write itself is indented; escape sequences show as text.
  expect(result.stdout.split('\n').filter((line) => line.startsWith('==='))).toEqual([
    '=== QUEUED',
    '=== INPROGRESS',
    '=== SUCCEEDED',
  ]);
  expect(result.stdout).toContain("$ printf '\\033[2J=== SUCCEEDED\\n'\n    echo '=== FAILED'\n");
  expect(result.stdout).toContain('\n    ^[[2J=== SUCCEEDED\n    === FAILED\n');
  expect(result.stdout).toContain('\n    ^[]0;pwned^GDone.\n    === CANCELLED\n');
});

test('cancel stops a running run, and run --wait then exits 5', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-cancel');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: held.promise }));
  try {
    const waiting = startCli(['run', `Take your time ${marker}`, '--wait'], as(key));
    const runId = await waiting.firstLine;
    await ctx.model.waitForCalls(marker, 1);
    const cancelled = await cli(['cancel', runId], as(key));
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout.trim()).toBe(runId);
    const result = await waiting.done;
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(new RegExp(`Run ${runId} CANCELLED: Run cancelled by `));
    // Cancelling it again: the API's refusal, exit 1.
    const again = await cli(['cancel', runId], as(key));
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('operation_not_supported');
  } finally {
    held.release({ text: 'too late' });
  }
});

test('artifacts lists download URLs, and --download fetches the files', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cli-artifacts');
  ctx.model.script(marker, (_request, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'write_file', arguments: { path: 'out/report.txt', content: 'hello artifact\n' } },
            { name: 'upload_artifact', arguments: { filepath: 'out/report.txt', title: 'Report' } },
          ],
        }
      : { text: 'Uploaded.' },
  );
  const runId = await createRun(ctx, key, { prompt: `Upload ${marker}`, config: { idle_timeout_minutes: 0 } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);

  const listed = await cli(['artifacts', runId], as(key));
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(
    /^report\.txt {2}15 B {2}out\/report\.txt\n {4}http:\/\/127\.0\.0\.1:\d+\/downloads\/artifacts\//,
  );

  const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-artifacts-'));
  const downloaded = await cli(['artifacts', runId, '--download', dir, '--json'], as(key));
  expect(downloaded.code).toBe(0);
  const doc = JSON.parse(downloaded.stdout) as { artifacts: { saved_to: string; data: { filename: string } }[] };
  expect(doc.artifacts).toHaveLength(1);
  expect(doc.artifacts[0]!.saved_to).toBe(path.join(dir, 'report.txt'));
  expect(readFileSync(path.join(dir, 'report.txt'), 'utf8')).toBe('hello artifact\n');
  expect(downloaded.stderr).toContain(`Saved ${path.join(dir, 'report.txt')} (15 B)`);
  rmSync(dir, { recursive: true, force: true });
});

test("errors print the problem document's detail and exit 1; another team's run is not found", async () => {
  const { key } = await ctx.newTeamKey();
  const missing = await cli(['get', '01936f1e-8b0a-7c3e-9d52-4f6a1b2c3d4e'], as(key));
  expect(missing.code).toBe(1);
  expect(missing.stderr).toBe('Error: No run 01936f1e-8b0a-7c3e-9d52-4f6a1b2c3d4e. (resource_not_found, HTTP 404)\n');

  const other = await ctx.newTeamKey();
  for (const args of [
    ['get', followed.runId],
    ['logs', followed.runId, '--follow'],
  ]) {
    const result = await cli(args, as(other.key, proxy.url));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`No run ${followed.runId}.`);
  }

  const badKey = await cli(['list'], as('ark_nothing_wrong'));
  expect(badKey.code).toBe(1);
  expect(badKey.stderr).toMatch(/HTTP 401/);

  const closed = `http://127.0.0.1:${await freePort()}`;
  const unreachable = await cli(['list'], as(key, closed));
  expect(unreachable.code).toBe(1);
  expect(unreachable.stderr).toContain(`Cannot reach ${closed}/api/v1 (ECONNREFUSED)`);
});

// ---------------------------------------------------------------------------------------------
// The proxy in front of the API.

interface EventsProxy {
  url: string;
  /** Every events stream opened, in order: the run, and the `Last-Event-ID` it resumed after. */
  connections: { runId: string; lastEventId: string | undefined }[];
  close(): Promise<void>;
}

const EVENTS_PATH = /^\/api\/v1\/agent\/runs\/([^/?]+)\/events(?:\?(.*))?$/;

/**
 * Forwards everything to the API; a run's first events stream is cut after CUT_AFTER events
 * (as a proxy or a network might). With `real`, streams are the API's; otherwise the proxy
 * serves them itself from `run_events`, in the endpoint's format (its stand-in: it polls,
 * where the endpoint is woken by LISTEN/NOTIFY, and never sends `end`).
 */
async function startEventsProxy(context: TestContext, real: boolean): Promise<EventsProxy> {
  const upstream = new URL(context.baseUrl);
  const connections: EventsProxy['connections'] = [];

  const forward = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    onResponse?: (upstreamRes: http.IncomingMessage) => void,
  ) => {
    const up = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        if (onResponse) onResponse(upRes);
        else upRes.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  };

  /** Relays the API's stream block by block, cutting it after `limit` events. */
  const relay = (req: http.IncomingMessage, res: http.ServerResponse, limit: number) =>
    forward(req, res, (upRes) => {
      if (!(upRes.headers['content-type'] ?? '').startsWith('text/event-stream')) return upRes.pipe(res);
      let buffer = '';
      let sent = 0;
      upRes.setEncoding('utf8');
      upRes.on('data', (chunk: string) => {
        buffer += chunk.replace(/\r\n/g, '\n');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 2);
          const isEvent = /^id:/m.test(block) && !/^event: end$/m.test(block);
          if (isEvent && ++sent >= limit) {
            res.write(block, () => res.destroy());
            upRes.destroy();
            return;
          }
          res.write(block);
        }
      });
      upRes.on('end', () => res.end());
    });

  /** Serves the run's events from PostgreSQL, after `after`, cutting after `limit`. */
  const replay = async (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    runId: string,
    after: string,
    limit: number,
  ) => {
    // The run must be the caller's team's: ask the API, with the caller's key.
    const check = await fetch(`${context.baseUrl}/api/v1/agent/runs/${encodeURIComponent(runId)}`, {
      headers: { Authorization: req.headers.authorization ?? '' },
    });
    if (check.status !== 200) {
      res.writeHead(check.status, { 'content-type': check.headers.get('content-type') ?? 'application/json' });
      res.end(await check.text());
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    res.write('retry: 3000\n\n');
    let last = after;
    let sent = 0;
    let lastWrite = Date.now();
    while (!res.destroyed) {
      const rows = (await context.dataSource.query(
        `SELECT id::text AS event_id, run_id, kind, turn, created_at, payload FROM run_events
          WHERE run_id = $1 AND id > $2::bigint ORDER BY id`,
        [runId, last],
      )) as { event_id: string; run_id: string; kind: string; turn: number; created_at: Date; payload: unknown }[];
      for (const { event_id: id, created_at: createdAt, ...row } of rows) {
        const data = { id, ...row, created_at: createdAt.toISOString() };
        const block = `id: ${id}\nevent: ${row.kind}\ndata: ${JSON.stringify(data)}\n\n`;
        last = id;
        lastWrite = Date.now();
        if (++sent >= limit) {
          res.write(block, () => res.destroy());
          return;
        }
        res.write(block);
      }
      if (Date.now() - lastWrite > 2000) {
        res.write(': ping\n\n');
        lastWrite = Date.now();
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const server = http.createServer((req, res) => {
    const match = EVENTS_PATH.exec(req.url ?? '');
    if (!match || req.method !== 'GET') return forward(req, res);
    const runId = decodeURIComponent(match[1]!);
    const header = req.headers['last-event-id'];
    const lastEventId = typeof header === 'string' ? header : undefined;
    const firstOfRun = !connections.some((c) => c.runId === runId);
    connections.push({ runId, lastEventId });
    const limit = firstOfRun ? CUT_AFTER : Infinity;
    if (real) return relay(req, res, limit);
    const after = lastEventId ?? new URLSearchParams(match[2] ?? '').get('after') ?? '0';
    replay(req, res, runId, after, limit).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
