import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { decryptSecret } from '../core/secrets';
import { auth } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import type { SecretsKeyring } from '../core/secrets-keyring';

/**
 * `agent-runs secrets set|list|delete`, spawned as a process (bin/agent-runs.mjs, from source)
 * against the test stack; the terminal prompt through a pseudo-terminal made by util-linux's
 * `script`.
 */
const CLI = path.join(__dirname, '..', 'bin', 'agent-runs.mjs');

let ctx: TestContext;
let secretsKeyring: SecretsKeyring;
beforeAll(async () => {
  ctx = await createTestContext({ worker: false });
  secretsKeyring = ctx.config.secretsKeyring!;
});
afterAll(async () => {
  await ctx?.close();
});

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI process: only what is given (no AGENT_RUNS_*, no colour settings inherited). */
function cliEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['AGENT_RUNS_URL', 'AGENT_RUNS_API_KEY', 'FORCE_COLOR', 'NO_COLOR', 'CI']) delete childEnv[name];
  return { ...childEnv, AGENT_RUNS_CLI_FROM_SOURCE: '1', ...env };
}

/** Runs `agent-runs <args>` with `stdin` piped in (and then closed). */
function cli(args: string[], env: Record<string, string> = {}, stdin = ''): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(env) });
  child.stdin.end(stdin);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `agent-runs <args>` on a terminal of its own: once the prompt shows, types `keys`.
 * Returns what the terminal showed (stdout and stderr together) and the exit code.
 */
function cliOnTerminal(
  args: string[],
  env: Record<string, string>,
  prompt: string,
  keys: string,
): Promise<{ code: number | null; screen: string }> {
  const command = [process.execPath, CLI, ...args].map(quote).join(' ');
  const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    env: cliEnv({ ...env, SHELL: '/bin/sh' }),
  });
  let screen = '';
  let typed = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk;
    if (!typed && screen.includes(prompt)) {
      typed = true;
      child.stdin.write(keys);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
  const timer = setTimeout(() => child.kill(), 30_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      child.stdin.end();
      resolve({ code, screen });
    });
  });
}

const as = (key: string) => ({ AGENT_RUNS_URL: ctx.baseUrl, AGENT_RUNS_API_KEY: key });

async function newTeam(): Promise<{ admin: string; member: string; teamId: string }> {
  const admin = await ctx.newTeamKey('personal', uniqueName('team'), 'admin');
  const member = await ctx.newTeamKey('personal', admin.team);
  const [row] = (await ctx.dataSource.query(`SELECT team_id FROM api_keys WHERE id = $1`, [admin.id])) as {
    team_id: string;
  }[];
  return { admin: admin.key, member: member.key, teamId: row!.team_id };
}

/** The stored value of a secret, decrypted; undefined when the team has none of that name. */
async function storedValue(teamId: string, name: string): Promise<string | undefined> {
  const [row] = (await ctx.dataSource.query(
    `SELECT encrypted_value FROM managed_secrets WHERE team_id = $1 AND name = $2`,
    [teamId, name],
  )) as { encrypted_value: string }[];
  return row && decryptSecret(row.encrypted_value, secretsKeyring);
}

const anthropicKey = () => `sk-ant-api03-${randomBytes(24).toString('hex')}`;

test('--help of secrets and of each of its commands; the value is no option and no argument', async () => {
  const top = await cli(['--help']);
  expect(top.stdout).toMatch(/\n {2}secrets +store, list and delete your team's secrets/);
  for (const command of ['set', 'list', 'delete']) {
    const result = await cli(['secrets', command, '--help']);
    expect([command, result.code]).toEqual([command, 0]);
    expect(result.stdout).toMatch(new RegExp(`^Usage: agent-runs secrets ${command} `));
    expect(result.stdout).toContain('--json');
  }
  const set = await cli(['secrets', 'set', '--help']);
  expect(set.stdout).toContain('Usage: agent-runs secrets set [options] <name>');
  expect(set.stdout).toContain('--kind <kind>');
  expect(set.stdout).not.toMatch(/--value|<value>/);
});

test('set reads the value from a pipe, dropping one trailing newline; stores (201) then replaces (200); never prints the value', async () => {
  const team = await newTeam();
  const value = anthropicKey();
  const stored = await cli(
    ['secrets', 'set', 'claude-main', '--description', 'Team key'],
    as(team.admin),
    `${value}\n`,
  );
  expect(stored).toEqual({
    code: 0,
    stdout: 'claude-main\n',
    stderr: 'Stored secret claude-main (anthropic_api_key).\n',
  });
  expect(await storedValue(team.teamId, 'claude-main')).toBe(value);
  const item = await ctx.api.get('/api/v1/agent/secrets/claude-main').set(auth(team.admin));
  expect(item.body).toMatchObject({ name: 'claude-main', kind: 'anthropic_api_key', description: 'Team key' });

  // No newline at all, a kind given, --json: the secret as the API shows it (no value).
  const other = `ghp_${randomBytes(16).toString('hex')}`;
  const replaced = await cli(['secrets', 'set', 'claude-main', '--kind', 'other', '--json'], as(team.admin), other);
  expect(replaced.code).toBe(0);
  expect(JSON.parse(replaced.stdout)).toEqual({
    name: 'claude-main',
    kind: 'other',
    description: null,
    created_at: item.body.created_at,
    updated_at: expect.any(String),
  });
  expect(replaced.stderr).toBe('Replaced secret claude-main (other).\n');
  expect(await storedValue(team.teamId, 'claude-main')).toBe(other);

  // Only one newline is dropped: a second is part of the value, which the API refuses.
  const twoNewlines = await cli(['secrets', 'set', 'claude-main'], as(team.admin), `${value}\n\n`);
  expect(twoNewlines).toEqual({
    code: 1,
    stdout: '',
    stderr:
      'Error: `value`: must be printable ASCII without spaces or line breaks (a key or a token). (invalid_request, HTTP 400)\n',
  });
  expect(await storedValue(team.teamId, 'claude-main')).toBe(other);

  for (const result of [stored, replaced, twoNewlines]) {
    expect(result.stdout + result.stderr).not.toContain(value.slice(8));
    expect(result.stdout + result.stderr).not.toContain(other.slice(4));
  }
});

test('set on a terminal prompts and does not echo what is typed (Backspace works); Ctrl-C stores nothing', async () => {
  const team = await newTeam();
  const value = anthropicKey();
  const prompt = 'Value of secret typed-key (not shown): ';
  const typed = await cliOnTerminal(['secrets', 'set', 'typed-key'], as(team.admin), prompt, `${value}X\x7f\r`);
  expect(typed.code).toBe(0);
  expect(typed.screen).toContain(prompt);
  expect(typed.screen).toContain('Stored secret typed-key (anthropic_api_key).');
  expect(typed.screen).not.toContain(value.slice(8, 24));
  expect(await storedValue(team.teamId, 'typed-key')).toBe(value);

  const cancelledPrompt = 'Value of secret never-stored (not shown): ';
  const cancelled = await cliOnTerminal(
    ['secrets', 'set', 'never-stored'],
    as(team.admin),
    cancelledPrompt,
    `${value.slice(0, 10)}\x03`,
  );
  expect(cancelled.code).toBe(1);
  expect(cancelled.screen).toContain('Error: Cancelled at the prompt; nothing was stored.');
  expect(cancelled.screen).not.toContain(value.slice(0, 10));
  expect(await storedValue(team.teamId, 'never-stored')).toBeUndefined();
});

test('list shows every secret by name with kind and description, never a value; --json is the list document', async () => {
  const team = await newTeam();
  const empty = await cli(['secrets', 'list'], as(team.member));
  expect(empty).toEqual({
    code: 0,
    stdout: '',
    stderr: 'Your team has no secrets. Store one with: agent-runs secrets set <name>\n',
  });

  const values = [anthropicKey(), `sk-proj-${randomBytes(24).toString('hex')}`];
  await cli(['secrets', 'set', 'b-claude', '--description', 'For Claude Code'], as(team.admin), values[0]);
  await cli(['secrets', 'set', 'a-codex'], as(team.admin), values[1]);

  const table = await cli(['secrets', 'list'], as(team.member));
  expect(table.code).toBe(0);
  const lines = table.stdout.split('\n');
  expect(lines[1]).toMatch(/│ NAME\s+│ KIND\s+│ DESCRIPTION\s+│ UPDATED\s+│/);
  expect(lines[3]).toMatch(/│ a-codex\s+│ openai_api_key\s+│\s+│ \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ │/);
  expect(lines[5]).toMatch(/│ b-claude\s+│ anthropic_api_key\s+│ For Claude Code\s+│ /);

  const json = await cli(['secrets', 'list', '--json'], as(team.member));
  const listed = JSON.parse(json.stdout) as { secrets: { name: string; kind: string }[]; page_info: unknown };
  expect(listed.secrets.map((s) => [s.name, s.kind])).toEqual([
    ['a-codex', 'openai_api_key'],
    ['b-claude', 'anthropic_api_key'],
  ]);
  expect(listed.page_info).toEqual({ has_next_page: false });
  for (const value of values) expect(table.stdout + json.stdout).not.toContain(value.slice(8));
});

test('delete removes the secret; a second delete, and a name the team has not, exit 1 with the API detail', async () => {
  const team = await newTeam();
  await cli(['secrets', 'set', 'old-key'], as(team.admin), anthropicKey());
  const deleted = await cli(['secrets', 'delete', 'old-key'], as(team.admin));
  expect(deleted).toEqual({ code: 0, stdout: 'old-key\n', stderr: 'Deleted secret old-key.\n' });
  expect(await storedValue(team.teamId, 'old-key')).toBeUndefined();

  const again = await cli(['secrets', 'delete', 'old-key', '--json'], as(team.admin));
  expect(again).toEqual({
    code: 1,
    stdout: '',
    stderr: 'Error: No secret old-key. (resource_not_found, HTTP 404)\n',
  });
  await cli(['secrets', 'set', 'kept'], as(team.admin), anthropicKey());
  const json = await cli(['secrets', 'delete', 'kept', '--json'], as(team.admin));
  expect([json.code, JSON.parse(json.stdout)]).toEqual([0, { name: 'kept', deleted: true }]);
});

test('a member key may list but not set or delete: exit 1 with the 403 detail; usage mistakes exit 2 and store nothing', async () => {
  const team = await newTeam();
  const value = anthropicKey();
  await cli(['secrets', 'set', 'shared'], as(team.admin), value);

  const set = await cli(['secrets', 'set', 'mine'], as(team.member), anthropicKey());
  expect(set.code).toBe(1);
  expect(set.stderr).toMatch(
    /^Error: Only an admin key of your team may store secrets; this key is a member key\. .*\(not_authorized, HTTP 403\)\n$/,
  );
  const del = await cli(['secrets', 'delete', 'shared'], as(team.member));
  expect(del.code).toBe(1);
  expect(del.stderr).toMatch(
    /^Error: Only an admin key of your team may delete secrets; .*\(not_authorized, HTTP 403\)\n$/,
  );
  expect((await cli(['secrets', 'list'], as(team.member))).stdout).toContain('shared');

  const usage: [string[], string, RegExp][] = [
    [['secrets', 'set', 'empty'], '', /^agent-runs: No value for secret empty: type it at the prompt, or pipe it in/],
    [['secrets', 'set', 'empty'], '\n', /^agent-runs: No value for secret empty/],
    [
      ['secrets', 'set', 'kinded', '--kind', 'aws_key'],
      value,
      /argument 'aws_key' is invalid\. Allowed choices are anthropic_api_key, /,
    ],
    [['secrets', 'set', 'in-argv', value], '', /too many arguments for 'set'/],
    [['secrets', 'set'], value, /missing required argument 'name'/],
    [['secrets'], '', /Usage: agent-runs secrets/],
  ];
  for (const [args, stdin, stderr] of usage) {
    const result = await cli(args, as(team.admin), stdin);
    expect([args, result.code, result.stdout]).toEqual([args, 2, '']);
    expect(result.stderr).toMatch(stderr);
    expect(result.stderr).not.toContain(value.slice(8));
  }
  const names = (await ctx.dataSource.query(`SELECT name FROM managed_secrets WHERE team_id = $1`, [team.teamId])) as {
    name: string;
  }[];
  expect(names.map((n) => n.name)).toEqual(['shared']);
});
