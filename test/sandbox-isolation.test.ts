import { existsSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createEnvironment } from './helpers/environments';
import { hostPidsRunning } from './helpers/host-processes';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { sessionPagePath } from './helpers/session-links';

/**
 * The hostile-command suite: the scripted model asks for what an attacker would, through the real
 * API, worker, Temporal and PostgreSQL, and every escape must fail visibly while ordinary work
 * goes on. Each command first prints who and where it is, so no test passes unsandboxed.
 */

const GIT_TOKEN = `ghp_${uniqueName('platformtoken')}`;
const PROVIDER_KEY = `sk-${uniqueName('providerkey')}`;

let ctx: TestContext;
let allowedServer: http.Server;
let allowedPort: number;

beforeAll(async () => {
  // A private service the operator opened to sandboxes by host:port (an in-house mirror, say).
  allowedServer = http.createServer((req, res) => res.end(`mirror says hello to ${req.url}\n`));
  await new Promise<void>((resolve) => allowedServer.listen(0, '127.0.0.1', resolve));
  allowedPort = (allowedServer.address() as AddressInfo).port;
  ctx = await createTestContext({
    env: {
      GIT_TOKEN,
      OPENAI_API_KEY: PROVIDER_KEY,
      AGENT_SANDBOX_MAX_PROCESSES: '64',
      AGENT_SANDBOX_MEMORY_MB: '256',
      AGENT_SANDBOX_MAX_FILE_SIZE_MB: '8',
      AGENT_NETWORK_ALLOWED_PRIVATE_HOSTS: `127.0.0.1:${allowedPort}`,
      AGENT_IDLE_TIMEOUT_MINUTES: '5',
    },
  });
});
afterAll(async () => {
  await ctx?.close();
  await new Promise((resolve) => allowedServer?.close(resolve));
});

const PROOF = 'echo "sandbox-proof uid=$(id -u) host=$(hostname) pwd=$PWD"';

interface ToolResult {
  output: string;
  exit_code: number | null;
  network_refusals?: { host: string; port: number; reason: string }[];
}

/** Runs each command as one run_command call of one run; returns the results in order. */
async function runCommands(
  key: string,
  commands: string[],
  extra: Record<string, unknown> = {},
  timeoutSeconds = 60,
): Promise<{ runId: string; results: ToolResult[] }> {
  const marker = uniqueName('hostile');
  ctx.model.script(marker, (_req, call) =>
    call <= commands.length
      ? {
          text: '',
          toolCalls: [
            {
              name: 'run_command',
              arguments: { command: `${PROOF}; ${commands[call - 1]!}`, timeout_seconds: timeoutSeconds },
            },
          ],
        }
      : { text: 'done' },
  );
  const runId = await createRun(ctx, key, { prompt: `Try ${marker}`, ...extra });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  const results = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'tool_call')
    .map((e) => ({
      output: String(e.payload.full_output ?? e.payload.output),
      exit_code: e.payload.exit_code as number | null,
      network_refusals: e.payload.network_refusals as ToolResult['network_refusals'],
    }));
  expect(results).toHaveLength(commands.length);
  for (const r of results) expect(r.output).toContain('sandbox-proof uid=1000 host=sandbox pwd=/workspace');
  return { runId, results };
}

/** A raw HTTP request through the sandbox's proxy with bash alone (no client tools assumed). */
const viaProxy = (requestLine: string, host: string) =>
  `exec 3<>/dev/tcp/127.0.0.1/3128 && printf '${requestLine}\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n' >&3 && cat <&3`;

test("the worker's secrets, environment and processes are out of reach", async () => {
  const { key } = await ctx.newTeamKey();
  const { results } = await runCommands(key, [
    "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/1/environ; env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
    'ps -eo pid,user,args 2>/dev/null || ls /proc',
    'kill -9 -1; echo killed-everything-i-can-see',
  ]);
  const [environ, ps, kill] = results as [ToolResult, ToolResult, ToolResult];
  for (const secret of [GIT_TOKEN, PROVIDER_KEY, ctx.stack.databaseUrl, 'DATABASE_URL', 'OPENAI_API_KEY']) {
    expect(environ.output).not.toContain(secret);
  }
  // Not even the worker's PATH (with its home directories) comes in.
  expect(environ.output).toMatch(/^PATH=\/usr\/local\/sbin:/m);
  expect(environ.output).not.toMatch(/^PATH=.*\/root/m);
  // Only the sandbox's own processes exist in its view: no node worker, no postgres, no temporal.
  expect(ps.output).not.toMatch(/postgres|temporal|jest|node .*worker/);
  expect(kill.output).toContain('killed-everything-i-can-see');
  // The worker survived `kill -9 -1`: the same run went on to its next model call and finished.
  const after = await runCommands(key, ['echo still-here']);
  expect(after.results[0]!.output).toContain('still-here');
});

test('the data directory, other workspaces and the host filesystem are invisible or read-only', async () => {
  const { key } = await ctx.newTeamKey();
  const other = await runCommands(key, ['echo other-team-secret > secret.txt']);
  const otherHostPath = path.join(ctx.config.workspace.dir, other.runId, 'secret.txt');
  expect(readFileSync(otherHostPath, 'utf8')).toBe('other-team-secret\n');
  const passwordFile = path.join(ctx.stack.dataDir, 'postgres', 'password');
  const password = readFileSync(passwordFile, 'utf8').trim();

  const { results } = await runCommands(key, [
    `cat ${passwordFile} ../../postgres/password; ls -la / ..; ls ${ctx.stack.dataDir}`,
    `cat ../${other.runId}/secret.txt ${otherHostPath} /workspace/../${other.runId}/secret.txt; ls ${ctx.config.workspace.dir}`,
    'for f in /usr/bin/evil /etc/evil /evil /dev/evil /proc/sys/kernel/hostname; do (echo x > $f) 2>&1 || echo "refused $f"; done',
    'echo private > /tmp/sandbox-private-tmp-file && cat /tmp/sandbox-private-tmp-file',
  ]);
  const [data, otherWs, writes, tmp] = results as [ToolResult, ToolResult, ToolResult, ToolResult];
  expect(data.output).not.toContain(password);
  expect(data.output).toMatch(/No such file or directory/);
  expect(otherWs.output).not.toContain('other-team-secret');
  expect(otherWs.output).not.toContain(other.runId + '\n');
  for (const f of ['/usr/bin/evil', '/etc/evil', '/evil', '/dev/evil', '/proc/sys/kernel/hostname'])
    expect(writes.output).toContain(`refused ${f}`);
  expect(existsSync('/usr/bin/evil')).toBe(false);
  expect(tmp.output).toContain('private');
  expect(existsSync('/tmp/sandbox-private-tmp-file')).toBe(false);
});

test('PostgreSQL, Temporal and the host loopback are unreachable, directly and through the proxy', async () => {
  const { key } = await ctx.newTeamKey();
  const pgPort = new URL(ctx.stack.databaseUrl).port;
  const temporalPort = ctx.stack.temporalAddress.split(':').pop()!;
  const apiPort = new URL(ctx.baseUrl).port;
  const { runId, results } = await runCommands(key, [
    `for p in ${pgPort} ${temporalPort} ${apiPort}; do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && echo "open $p" || echo "closed $p"; done`,
    viaProxy(`CONNECT 127.0.0.1:${pgPort} HTTP/1.1`, `127.0.0.1:${pgPort}`),
    viaProxy(`GET http://localhost:${temporalPort}/ HTTP/1.1`, `localhost:${temporalPort}`),
    viaProxy('GET http://169.254.169.254/latest/meta-data/ HTTP/1.1', '169.254.169.254'),
    viaProxy('CONNECT [::ffff:127.0.0.1]:22 HTTP/1.1', '[::ffff:127.0.0.1]:22'),
  ]);
  const [direct, pg, temporal, metadata, mapped] = results as ToolResult[] as [
    ToolResult,
    ToolResult,
    ToolResult,
    ToolResult,
    ToolResult,
  ];
  for (const p of [pgPort, temporalPort, apiPort]) expect(direct.output).toContain(`closed ${p}`);
  for (const r of [pg, temporal, metadata, mapped]) {
    expect(r.output).toContain('403 Forbidden');
    // One refusal for private addresses and the platform's own services alike.
    expect(r.output).toMatch(/is not a public address this service may connect to/);
    expect(r.output).not.toMatch(/loopback|platform/);
    expect(r.network_refusals?.length).toBe(1);
  }
  // Every refusal is in the transcript the user reads, and what the model was told.
  expect(metadata.output).toContain('[sandbox network] refused 169.254.169.254:80');
  const run = await getRun(ctx, key, runId);
  const page = await ctx.api.get(sessionPagePath(run.session_link));
  expect(page.text).toContain('169.254.169.254');
});

test('network policy per environment: none, an allow-list, and an operator-allowed private host', async () => {
  const { key } = await ctx.newTeamKey();
  const target = `127.0.0.1:${allowedPort}`;
  const openRun = await runCommands(key, [
    viaProxy(`GET http://${target}/from-open HTTP/1.1`, target),
    `curl -sS --max-time 10 http://${target}/with-curl || echo "curl unavailable"`,
  ]);
  expect(openRun.results[0]!.output).toContain('mirror says hello to /from-open');
  expect(openRun.results[1]!.output).toMatch(/mirror says hello to \/with-curl|curl unavailable/);

  const noneEnv = await createEnvironment(ctx, key, { name: 'offline', network: 'none' });
  const none = await runCommands(
    key,
    [
      viaProxy(`GET http://${target}/ HTTP/1.1`, target),
      `(echo > /dev/tcp/127.0.0.1/${allowedPort}) 2>&1 || echo no-route`,
    ],
    {
      config: { environment_id: noneEnv },
    },
  );
  // With `none` there is no proxy at all: nothing listens on the sandbox's port 3128.
  expect(none.results[0]!.output).toMatch(/Connection refused|No such file/);
  expect(none.results[1]!.output).toContain('no-route');

  const listEnv = await createEnvironment(ctx, key, {
    name: 'allow-list',
    network: { allowed_domains: ['*.example.org', 'LOCALHOST'] },
  });
  const list = await runCommands(
    key,
    [
      viaProxy(`GET http://${target}/ HTTP/1.1`, target),
      viaProxy('CONNECT evil.example.com:443 HTTP/1.1', 'evil.example.com:443'),
      viaProxy('GET http://localhost:5432/ HTTP/1.1', 'localhost:5432'),
    ],
    { config: { environment_id: listEnv } },
  );
  const [ipLiteral, notListed, listedButLoopback] = list.results as [ToolResult, ToolResult, ToolResult];
  expect(ipLiteral.output).toContain("127.0.0.1 is not in this environment's allowed domains");
  expect(notListed.output).toContain("evil.example.com is not in this environment's allowed domains");
  // A listed name is still refused when it resolves to loopback: the proxy resolves names itself.
  expect(listedButLoopback.output).toContain('localhost:5432 is not a public address this service may connect to');
  expect(listedButLoopback.output).not.toMatch(/127\.0\.0\.1|::1/);

  const bad = await ctx.api
    .post('/api/v1/agent/environments')
    .set(auth(key))
    .send({ config: { name: 'bad', network: { allowed_domains: ['10.0.0.1'] } } });
  expect(bad.status).toBe(400);
  expect(bad.body.detail).toContain('network');
});

test('a fork bomb, a memory hog and a huge file end that command with a clear error; the run carries on', async () => {
  const { key } = await ctx.newTeamKey();
  const { runId, results } = await runCommands(
    key,
    [
      'bomb() { bomb | bomb & }; bomb; sleep 3; echo bomb-done',
      'node -e "const a = Buffer.alloc(1024 * 1024 * 1024, 1); console.log(a.length)"',
      'head -c 64M /dev/zero > big.bin; echo "exit=$?"; ls -l big.bin',
      'for i in $(seq 12); do head -c 7M /dev/zero > /dev/shm/m$i || break; done; du -sm /dev/shm',
      'echo after-the-limits',
    ],
    {},
    8,
  );
  const [bomb, hog, file, shm, after] = results as [ToolResult, ToolResult, ToolResult, ToolResult, ToolResult];
  expect(bomb.output).toMatch(/process limit \(AGENT_SANDBOX_MAX_PROCESSES\)|Resource temporarily unavailable/);
  expect(hog.exit_code).not.toBe(0);
  expect(hog.output).not.toContain('1073741824');
  expect(file.output).toContain('exit=153');
  expect(statSync(path.join(ctx.config.workspace.dir, runId, 'big.bin')).size).toBeLessThanOrEqual(8 * 1024 * 1024);
  // RAM-backed /dev/shm is bounded (a quarter of the memory limit: 64 MiB here).
  expect(shm.output).toMatch(/No space left on device/);
  expect(Number(/^(\d+)\s+\/dev\/shm/m.exec(shm.output)?.[1])).toBeLessThanOrEqual(64);
  expect(after.output).toContain('after-the-limits');
  // Nothing of the bomb survives its command.
  expect(hostPidsRunning('bomb')).toHaveLength(0);
});

test("a run's processes share one cgroup: memory is limited for the run as a whole, and an OOM kill says so", async () => {
  const { key } = await ctx.newTeamKey();
  // Three processes of 150 MiB each: under a per-process limit of 256 MiB all three would live.
  const hog = (n: number) =>
    `node -e "const b = Buffer.alloc(150 << 20, 1); setTimeout(() => console.log('alive-${n}', b.length), 3000)" &`;
  const { results } = await runCommands(key, [`${hog(1)} ${hog(2)} ${hog(3)} wait; echo waited`, 'echo after-the-oom']);
  const [hogs, after] = results as [ToolResult, ToolResult];
  // Lines a live hog printed (a killed one's command line, which bash echoes, holds the word too).
  expect((hogs.output.match(/^alive-\d \d+$/gm) ?? []).length).toBeLessThan(3);
  expect(hogs.output).toContain(
    "The kernel killed a process of this command: the run's processes together reached their memory limit of 256 MiB (AGENT_SANDBOX_MEMORY_MB).",
  );
  expect(after.output).toContain('after-the-oom');
});

test('a run whose files grow past AGENT_WORKSPACE_MAX_BYTES fails with budget_exceeded', async () => {
  const limited = await createTestContext({
    env: { AGENT_WORKSPACE_MAX_BYTES: String(24 * 1024 * 1024), AGENT_SANDBOX_MAX_FILE_SIZE_MB: '8' },
  });
  try {
    const { key } = await limited.newTeamKey();
    const marker = uniqueName('disk');
    // Each file is under the per-file limit; together they are not.
    limited.model.script(marker, (_req, call) =>
      call === 1
        ? {
            text: '',
            toolCalls: [
              {
                name: 'run_command',
                arguments: { command: 'for i in 1 2 3 4 5; do head -c 7M /dev/urandom > f$i; done; echo wrote' },
              },
            ],
          }
        : { text: 'should not be asked again' },
    );
    const runId = await createRun(limited, key, { prompt: `Fill ${marker}`, config: { idle_timeout_minutes: 0 } });
    const run = await waitForState(limited, key, runId, ['FAILED', 'SUCCEEDED', 'ERROR'], undefined, 60_000);
    expect(run.state).toBe('FAILED');
    expect(run.status_message).toMatchObject({
      error_code: 'budget_exceeded',
      retryable: false,
      message: expect.stringContaining('reached its limit of 24.0 MiB (AGENT_WORKSPACE_MAX_BYTES)'),
    });
    expect(limited.model.calls(marker)).toHaveLength(1);
    const call = (await transcript(limited, runId)).find((e) => e.kind === 'tool_call');
    // The write past the limit failed in the run itself, and the model is told why.
    expect(call?.payload).toMatchObject({
      is_error: true,
      output: expect.stringMatching(/No space left on device[\s\S]*AGENT_WORKSPACE_MAX_BYTES/),
    });
  } finally {
    await limited.close();
  }
});

test('ordinary work keeps working: files, git, diffs, a local server, the file tools', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('ordinary');
  const commands = [
    'mkdir -p src && echo "export const x = 1;" > src/x.ts && git add -A && git commit -qm first && git log --oneline | wc -l',
    'python3 -m http.server 8123 --bind 127.0.0.1 >/dev/null 2>&1 & for i in $(seq 50); do curl -s http://127.0.0.1:8123/src/x.ts && break; sleep 0.1; done; kill %1',
  ];
  ctx.model.script(marker, (_req, call) => {
    if (call <= commands.length)
      return { text: '', toolCalls: [{ name: 'run_command', arguments: { command: commands[call - 1]! } }] };
    if (call === commands.length + 1)
      return { text: '', toolCalls: [{ name: 'write_file', arguments: { path: 'notes/a.md', content: 'hello\n' } }] };
    if (call === commands.length + 2)
      return {
        text: '',
        toolCalls: [{ name: 'edit_file', arguments: { path: 'src/x.ts', old_text: '= 1', new_text: '= 2' } }],
      };
    if (call === commands.length + 3)
      return {
        text: '',
        toolCalls: [{ name: 'run_command', arguments: { command: 'cat notes/a.md src/x.ts; ls -ln' } }],
      };
    return { text: 'done' };
  });
  const runId = await createRun(ctx, key, { prompt: `Work ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  const events = await transcript(ctx, runId);
  const tools = events
    .filter((e) => e.kind === 'tool_call')
    .map((e) => String(e.payload.full_output ?? e.payload.output));
  expect(tools[0]).toMatch(/^2$/m);
  expect(tools[1]).toMatch(/export const x = 1;|python3: command not found|curl: command not found/);
  expect(tools[4]).toContain('hello\nexport const x = 2;');
  // Files the tools wrote belong to the run (uid 1000 inside), so its own commands can change them.
  expect(tools[4]).toMatch(/1000\s+1000[^\n]*notes/);
  const diffs = events
    .filter((e) => e.kind === 'files_changed')
    .flatMap((e) => e.payload.files as { path: string; diff: string }[]);
  expect(diffs.some((f) => f.path === 'notes/a.md' && f.diff.includes('+hello'))).toBe(true);
  expect(diffs.some((f) => f.path === 'src/x.ts' && f.diff.includes('+export const x = 2;'))).toBe(true);
});

test('file tools refuse paths and symlinks that lead out of the workspace', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('symlink');
  const passwordFile = path.join(ctx.stack.dataDir, 'postgres', 'password');
  ctx.model.script(marker, (_req, call) => {
    const steps = [
      {
        name: 'run_command',
        arguments: { command: `ln -s ${passwordFile} pw; ln -s / root; ln -s /etc/passwd etcpw` },
      },
      { name: 'read_file', arguments: { path: 'pw' } },
      { name: 'read_file', arguments: { path: '../../postgres/password' } },
      { name: 'write_file', arguments: { path: 'root/tmp/escaped.txt', content: 'x' } },
      { name: 'read_file', arguments: { path: 'etcpw' } },
    ];
    return call <= steps.length ? { text: '', toolCalls: [steps[call - 1]!] } : { text: 'done' };
  });
  const runId = await createRun(ctx, key, { prompt: `Escape ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  const outputs = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'tool_call')
    .map((e) => ({ output: String(e.payload.output), isError: e.payload.is_error }));
  const password = readFileSync(passwordFile, 'utf8').trim();
  for (const o of outputs.slice(1)) {
    expect(o.output).not.toContain(password);
    expect(o.isError).toBe(true);
    expect(o.output).toMatch(/outside the workspace|dangling symlink/);
  }
});

test('an MCP server URL on a private or loopback address is refused at connect time', async () => {
  const { key } = await ctx.newTeamKey();
  const mcp = http.createServer((_req, res) => res.writeHead(500).end());
  await new Promise<void>((resolve) => mcp.listen(0, '127.0.0.1', resolve));
  const port = (mcp.address() as AddressInfo).port;
  try {
    for (const url of [`http://127.0.0.1:${port}/mcp`, `http://localhost:${port}/mcp`, 'http://169.254.169.254/mcp']) {
      const runId = await createRun(ctx, key, {
        prompt: `MCP ${uniqueName('ssrf')}`,
        config: { mcp_servers: { internal: { url } } },
      });
      const run = await waitForState(ctx, key, runId, ['FAILED'], undefined, 60_000);
      expect((run.status_message as { message: string }).message).toMatch(
        /refused: .*is not a public address this service may connect to/,
      );
    }
  } finally {
    await new Promise((resolve) => mcp.close(resolve));
  }
});
