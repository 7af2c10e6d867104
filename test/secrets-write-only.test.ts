import { execFile } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createApp } from '../api/app';
import { requestHash } from '../services/runs/idempotency';
import { loadConfig } from '../core/config';
import { createLogger } from '../core/logger';
import type { McpServerConfig } from '../core/run-types';
import {
  decryptMcpServers,
  decryptSecret,
  encryptMcpServers,
  encryptSecret,
  REDACTED,
  redactMcpServers,
} from '../core/secrets';
import { keyringOf, parseSecretsKey } from '../core/secrets-keyring';
import { appendRunEvent } from '../db/run-events';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { startMcpHttpServer } from './helpers/mcp-http-server';
import { secretsCli } from './helpers/operator-commands';
import { auth, createRun, getRun, waitForState, type RunBody } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { sessionLinkQuery } from './helpers/session-links';
import { WebhookReceiver, type ReceivedRequest } from './helpers/webhook-receiver';

/**
 * MCP `env` and `headers` values are write-only: encrypted at rest, `"***"` in every response; and
 * the key they (and the other stored secrets) are encrypted under can be rotated.
 */
const ROOT = path.resolve(__dirname, '..');
const KEY_TEXT = randomBytes(32).toString('base64');
const KEY = Buffer.from(KEY_TEXT, 'base64');
const RING = keyringOf(KEY);
const KEY_RULE = /SECRETS_ENCRYPTION_KEY must be 32 random bytes.*openssl rand -base64 32/;

const TOKEN = `tok-${randomBytes(12).toString('hex')}`;
const DB_PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const servers = (): Record<string, McpServerConfig> => ({
  tracker: { url: 'https://mcp.example.com/mcp', headers: { Authorization: `Bearer ${TOKEN}`, 'X-Team': 'platform' } },
  db: { command: 'npx', args: ['-y', 'db-mcp'], env: { DB_PASSWORD, LOG_LEVEL: 'warn' } },
});
const redacted = {
  tracker: { url: 'https://mcp.example.com/mcp', headers: { Authorization: REDACTED, 'X-Team': REDACTED } },
  db: { command: 'npx', args: ['-y', 'db-mcp'], env: { DB_PASSWORD: REDACTED, LOG_LEVEL: REDACTED } },
};

/** What encryptSecret wrote before values named their key: `enc:v1:<base64url(iv | tag | ciphertext)>`. */
function legacyV1(value: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return `enc:v1:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
}

const tempDir = () => mkdtempSync(path.join(os.tmpdir(), 'agent-runs-secrets-'));

describe('core/secrets', () => {
  test('MCP servers round trip; each value is enc:v2:<key id>: with a fresh IV; names, keys and the rest are kept', () => {
    const encrypted = encryptMcpServers(servers(), RING);
    expect(decryptMcpServers(encrypted, RING)).toEqual(servers());
    expect(Object.keys(encrypted)).toEqual(['tracker', 'db']);
    expect(encrypted.db).toMatchObject({ command: 'npx', args: ['-y', 'db-mcp'] });
    expect(encrypted.tracker!.url).toBe('https://mcp.example.com/mcp');
    const values = [...Object.values(encrypted.tracker!.headers!), ...Object.values(encrypted.db!.env!)];
    expect(Object.keys(encrypted.db!.env!)).toEqual(['DB_PASSWORD', 'LOG_LEVEL']);
    for (const value of values) expect(value).toMatch(/^enc:v2:fp-[0-9a-f]{12}:[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(encrypted)).not.toContain(TOKEN);
    expect(JSON.stringify(encrypted)).not.toContain(DB_PASSWORD);
    expect(encryptSecret(TOKEN, RING)).not.toBe(encryptSecret(TOKEN, RING));
    expect(encryptMcpServers(undefined, RING)).toBeUndefined();
    expect(decryptSecret(encryptSecret('', RING), RING)).toBe('');
  });

  test('a value stored before encryption passes through decrypt unchanged', () => {
    expect(decryptSecret('plain-old-value', RING)).toBe('plain-old-value');
    expect(decryptMcpServers(servers(), RING)).toEqual(servers());
  });

  test('a tampered ciphertext, a truncated one and the wrong key all throw', () => {
    const sealed = encryptSecret(TOKEN, RING);
    const prefix = `enc:v2:${RING.keys[0].id}:`;
    const raw = Buffer.from(sealed.slice(prefix.length), 'base64url');
    raw[raw.length - 1] = raw[raw.length - 1]! ^ 1;
    expect(() => decryptSecret(`${prefix}${raw.toString('base64url')}`, RING)).toThrow(/Cannot decrypt/);
    const tag = Buffer.from(sealed.slice(prefix.length), 'base64url');
    tag[12] = tag[12]! ^ 1;
    expect(() => decryptSecret(`${prefix}${tag.toString('base64url')}`, RING)).toThrow(/Cannot decrypt/);
    expect(() => decryptSecret(`${prefix}AAAA`, RING)).toThrow(/Cannot decrypt/);
    const other = keyringOf(randomBytes(32));
    expect(() => decryptSecret(sealed, other)).toThrow(/not among the configured keys/);
    expect(() => decryptMcpServers(encryptMcpServers(servers(), RING), other)).toThrow(/Cannot decrypt/);
  });

  test('parseSecretsKey takes 32 bytes as base64 or hex and rejects anything else without echoing it', () => {
    const bytes = randomBytes(32);
    expect(parseSecretsKey(bytes.toString('base64'))).toEqual(bytes);
    expect(parseSecretsKey(`${bytes.toString('hex')}\n`)).toEqual(bytes);
    const bad = [
      '',
      'hunter2-is-my-password',
      randomBytes(16).toString('base64'),
      randomBytes(33).toString('base64'),
      `${bytes.toString('hex')}0`,
      bytes.toString('base64url'),
    ];
    for (const text of bad) {
      let message = '';
      try {
        parseSecretsKey(text);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(KEY_RULE);
      if (text) expect(message).not.toContain(text);
    }
  });

  test('redactMcpServers replaces every env and headers value with "***" and keeps everything else', () => {
    expect(redactMcpServers(servers())).toEqual(redacted);
    expect(redactMcpServers(undefined)).toBeUndefined();
  });
});

describe('infra/secrets-key', () => {
  test('create: true writes a 0600 key file in a new data dir; later calls reuse it', () => {
    const dataDir = path.join(tempDir(), 'data');
    const config = loadConfig({ AGENT_RUNS_DATA_DIR: dataDir });
    expect(() => resolveSecretsKeyring(config)).toThrow(/SECRETS_ENCRYPTION_KEY is not set.*openssl rand -base64 32/s);
    expect(existsSync(dataDir)).toBe(false);

    const ring = resolveSecretsKeyring(config, { create: true });
    const file = path.join(dataDir, 'secrets.key');
    expect(ring.keys).toHaveLength(1);
    expect(ring.keys[0].key).toHaveLength(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(keyringOf(parseSecretsKey(readFileSync(file, 'utf8')))).toEqual(ring);
    expect(resolveSecretsKeyring(config)).toEqual(ring);
    expect(resolveSecretsKeyring(config, { create: true })).toEqual(ring);
  });

  test('SECRETS_ENCRYPTION_KEY(S) win over the file; a bad one or a bad file is an error naming what to fix', () => {
    const dataDir = tempDir();
    resolveSecretsKeyring(loadConfig({ AGENT_RUNS_DATA_DIR: dataDir }), { create: true });
    expect(
      resolveSecretsKeyring(loadConfig({ AGENT_RUNS_DATA_DIR: dataDir, SECRETS_ENCRYPTION_KEY: KEY_TEXT })),
    ).toEqual(RING);
    const ring = { AGENT_RUNS_DATA_DIR: dataDir, SECRETS_ENCRYPTION_KEYS: `k1=${KEY_TEXT}` };
    expect(resolveSecretsKeyring(loadConfig(ring))).toEqual({ keys: [{ id: 'k1', key: KEY }] });
    // Checked at the start, by the configuration: the process stops before it opens anything.
    expect(() => loadConfig({ AGENT_RUNS_DATA_DIR: dataDir, SECRETS_ENCRYPTION_KEY: 'not-a-key' })).toThrow(KEY_RULE);

    const brokenDir = tempDir();
    writeFileSync(path.join(brokenDir, 'secrets.key'), 'garbage\n');
    expect(() => resolveSecretsKeyring(loadConfig({ AGENT_RUNS_DATA_DIR: brokenDir }), { create: true })).toThrow(
      /secrets\.key does not hold a valid key/,
    );
    expect(readFileSync(path.join(brokenDir, 'secrets.key'), 'utf8')).toBe('garbage\n');
  });

  test('the API entry point refuses to start without a key, saying how to make one', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      AGENT_RUNS_DATA_DIR: tempDir(),
      DATABASE_URL: 'postgres://127.0.0.1:1/none',
    };
    delete env.SECRETS_ENCRYPTION_KEY;
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'api/main.ts'],
        { cwd: ROOT, env, timeout: 60_000 },
        (err, _stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr }),
      );
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/API failed to start: .*SECRETS_ENCRYPTION_KEY is not set.*openssl rand -base64 32/s);
  });
});

describe('the API', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ env: { SECRETS_ENCRYPTION_KEY: KEY_TEXT }, worker: false });
  });
  afterAll(async () => {
    await ctx?.close();
  });

  const storedConfig = async (runId: string) =>
    (
      (await ctx.dataSource.query(`SELECT config FROM runs WHERE run_id = $1`, [runId])) as {
        config: { mcp_servers: Record<string, McpServerConfig> };
      }[]
    )[0]!.config;

  const sessionPage = async (runId: string) => {
    const [{ session_id }] = (await ctx.dataSource.query(`SELECT session_id FROM runs WHERE run_id = $1`, [runId])) as [
      { session_id: string },
    ];
    const page = await ctx.api.get(`/sessions/${session_id}?${sessionLinkQuery(ctx, session_id)}`);
    expect(page.status).toBe(200);
    return page.text;
  };

  const expectNoSecret = (text: string) => {
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(DB_PASSWORD);
  };

  test('created with MCP credentials: stored encrypted, "***" in the run, the list, the conversation and the page', async () => {
    const { key } = await ctx.newTeamKey();
    const prompt = `Use the tracker ${uniqueName('mcp-secrets')}`;
    const runId = await createRun(ctx, key, { prompt, config: { name: 'mcp-bot', mcp_servers: servers() } });

    const stored = await storedConfig(runId);
    const storedText = JSON.stringify(stored);
    expectNoSecret(storedText);
    expect(storedText).toContain(`enc:v2:${RING.keys[0].id}:`);
    // The worker's view: decrypting the stored row gives back exactly what was sent.
    expect(decryptMcpServers(stored.mcp_servers, RING)).toEqual(servers());

    const run = await getRun(ctx, key, runId);
    expect(run.agent_config).toMatchObject({ name: 'mcp-bot', mcp_servers: redacted });
    expectNoSecret(JSON.stringify(run));
    expect(JSON.stringify(run)).not.toContain('enc:');

    const list = await ctx.api.get('/api/v1/agent/runs').set(auth(key));
    expect(list.status).toBe(200);
    expect(
      (list.body.runs as RunBody[]).map((r) => [r.run_id, (r.agent_config as { mcp_servers: unknown }).mcp_servers]),
    ).toEqual([[runId, redacted]]);
    expectNoSecret(list.text);

    const conversation = await ctx.api
      .get(`/api/v1/agent/conversations/${run.conversation_id as string}`)
      .set(auth(key));
    expect(conversation.status).toBe(200);
    expect((conversation.body.runs as RunBody[])[0]!.agent_config).toMatchObject({ mcp_servers: redacted });
    expect(conversation.body.actions).toEqual([expect.objectContaining({ kind: 'user_message', text: prompt })]);
    expectNoSecret(conversation.text);

    const page = await sessionPage(runId);
    expect(page).toContain('Use the tracker');
    expectNoSecret(page);
  });

  test('a credential a worker recorded in the transcript or a status is masked on every way out', async () => {
    const { key } = await ctx.newTeamKey();
    const runId = await createRun(ctx, key, { prompt: 'echo', config: { mcp_servers: servers() } });
    // What an MCP server that echoes its credentials in an error would leave behind.
    await appendRunEvent(ctx.dataSource.manager, {
      runId,
      eventKey: 'echo-tool',
      kind: 'tool_call',
      turn: 1,
      payload: {
        tool_call_id: 'c1',
        name: 'mcp__tracker__whoami',
        input: { header: `Bearer ${TOKEN}`, token: TOKEN },
        output: `denied for token ${TOKEN}; db password ${DB_PASSWORD}; level warn`,
        is_error: true,
      },
    });
    await ctx.dataSource.query(`UPDATE runs SET status_message = $2::jsonb WHERE run_id = $1`, [
      runId,
      JSON.stringify({ message: `MCP server db failed: bad password ${DB_PASSWORD}`, error_code: 'invalid_request' }),
    ]);

    const run = await getRun(ctx, key, runId);
    expect(run.status_message).toEqual({
      message: 'MCP server db failed: bad password ***',
      error_code: 'invalid_request',
    });

    const conversation = await ctx.api
      .get(`/api/v1/agent/conversations/${run.conversation_id as string}`)
      .set(auth(key));
    const toolCall = (conversation.body.actions as Record<string, unknown>[]).find((a) => a.kind === 'tool_call');
    // Short values ("warn") are not masked in text: they are no credentials and would garble it.
    expect(toolCall).toMatchObject({
      input: { header: REDACTED, token: REDACTED },
      output: 'denied for token ***; db password ***; level warn',
    });
    expectNoSecret(conversation.text);

    const page = await sessionPage(runId);
    expect(page).toContain('denied for token ***; db password ***');
    expectNoSecret(page);
  });

  test('rows stored in plain text before encryption existed are shown redacted too', async () => {
    const { key } = await ctx.newTeamKey();
    const runId = await createRun(ctx, key, { prompt: 'legacy', config: { mcp_servers: servers() } });
    await ctx.dataSource.query(
      `UPDATE runs SET config = jsonb_set(config, '{mcp_servers}', $2::jsonb) WHERE run_id = $1`,
      [runId, JSON.stringify(servers())],
    );
    expect(JSON.stringify(await storedConfig(runId))).toContain(TOKEN);
    const run = await getRun(ctx, key, runId);
    expect(run.agent_config).toMatchObject({ mcp_servers: redacted });
    expectNoSecret(JSON.stringify(run));
  });

  test('idempotent create: a retry replays, other credentials conflict, and the stored hash is keyed', async () => {
    const { key, uid } = await ctx.newTeamKey();
    const idempotencyKey = uniqueName('idem');
    const body = { prompt: 'idempotent mcp', config: { mcp_servers: servers() } };
    const send = (b: object) =>
      ctx.api.post('/api/v1/agent/runs').set(auth(key)).set('Idempotency-Key', idempotencyKey).send(b);
    const first = await send(body);
    expect(first.status).toBe(201);
    const again = await send(body);
    expect(again.status).toBe(201);
    expect(again.body.run_id).toBe(first.body.run_id);
    const changed = servers();
    changed.tracker!.headers!.Authorization = 'Bearer another-token-value';
    const conflict = await send({ ...body, config: { mcp_servers: changed } });
    expect(conflict.status).toBe(409);

    const [record] = (await ctx.dataSource.query(
      `SELECT request_hash FROM idempotency_records WHERE principal_uid = $1 AND key = $2`,
      [uid, idempotencyKey],
    )) as { request_hash: string }[];
    // An unkeyed hash of the body would let anyone with the table guess a weak credential offline.
    expect(record!.request_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(record!.request_hash).not.toBe(requestHash(body));
  });

  test('createApp without a key in the config or the data dir fails fast, saying how to make one', () => {
    const config = loadConfig({ AGENT_RUNS_DATA_DIR: tempDir() });
    expect(() =>
      createApp({
        config,
        dataSource: ctx.dataSource,
        temporalClient: ctx.client,
        temporalConnection: ctx.connection,
        logger: createLogger('error', 'test'),
      }),
    ).toThrow(/SECRETS_ENCRYPTION_KEY is not set.*openssl rand -base64 32/s);
  });
});

describe('rotating the key', () => {
  /** A: the key the service ran with alone (SECRETS_ENCRYPTION_KEY); B: the one it rotates to. */
  const A = randomBytes(32);
  const B = randomBytes(32);
  const ring = (...entries: [string, Buffer][]) => ({
    SECRETS_ENCRYPTION_KEYS: entries.map(([id, k]) => `${id}=${k.toString('base64')}`).join(','),
  });
  const LOOPBACK = { OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1', WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '100' };
  const MCP_TOKEN = `mcp-${randomBytes(12).toString('hex')}`;
  const marker = uniqueName('rotated');
  let before: TestContext | undefined;
  let after: TestContext | undefined;
  let mcp: Awaited<ReturnType<typeof startMcpHttpServer>> | undefined;
  const receiver = new WebhookReceiver();
  /** What the first phase stored under A, for the later ones. */
  const stored = { key: '', queue: '', runId: '', webhookId: '', webhookSecret: '', identityUid: '', secretName: '' };

  beforeAll(async () => {
    mcp = await startMcpHttpServer(MCP_TOKEN, { colour: 'teal' });
    before = await createTestContext({
      env: { ...LOOPBACK, SECRETS_ENCRYPTION_KEY: A.toString('base64') },
      worker: false,
    });
  });
  afterAll(async () => {
    await before?.close();
    await after?.close();
    await mcp?.stop();
    await receiver.stop();
  });

  /** The key id (`v2:<id>`, or `v1`) of every value the first phase stored, in the database now. */
  async function storedUnder(c: TestContext): Promise<string[]> {
    const values = async (sql: string, id: string) =>
      ((await c.dataSource.query(sql, [id])) as { v: unknown }[]).map((r) => JSON.stringify(r.v));
    const all = [
      ...(await values(`SELECT secret AS v FROM webhooks WHERE id = $1`, stored.webhookId)),
      ...(await values(`SELECT encrypted_value AS v FROM managed_secrets WHERE name = $1`, stored.secretName)),
      ...(await values(`SELECT mcp_servers AS v FROM agent_identities WHERE uid = $1`, stored.identityUid)),
      ...(await values(`SELECT config->'mcp_servers' AS v FROM runs WHERE run_id = $1`, stored.runId)),
      ...(await values(`SELECT run->'config'->'mcp_servers' AS v FROM webhook_events WHERE run_id = $1`, stored.runId)),
    ];
    return all.flatMap((v) => [...v.matchAll(/enc:(v1|v2:[^:]+):/g)].map((m) => m[1]!));
  }

  test('under A alone: a webhook, a managed secret (one from before key ids), an identity and a run with MCP credentials', async () => {
    const c = before!;
    const { key } = await c.newTeamKey('personal', undefined, 'admin');
    stored.key = key;
    stored.queue = c.config.temporal.taskQueue;
    const hook = await c.api
      .post('/api/v1/agent/webhooks')
      .set(auth(key))
      .send({ url: await receiver.start() });
    expect(hook.status).toBe(201);
    [stored.webhookId, stored.webhookSecret] = [hook.body.id as string, hook.body.secret as string];
    stored.secretName = uniqueName('claude');
    const value = `sk-ant-api03-${randomBytes(24).toString('hex')}`;
    const secret = await c.api.post('/api/v1/agent/secrets').set(auth(key)).send({ name: stored.secretName, value });
    expect(secret.status).toBe(201);
    // As encryptSecret wrote it before values named their key: enc:v1, no id.
    await c.dataSource.query(`UPDATE managed_secrets SET encrypted_value = $2 WHERE name = $1`, [
      stored.secretName,
      legacyV1(value, A),
    ]);
    const kb = { kb: { url: mcp!.url, headers: { authorization: `Bearer ${MCP_TOKEN}` } } };
    const identity = await c.api
      .post('/api/v1/agent/identities')
      .set(auth(key))
      .send({ name: uniqueName('agent'), mcp_servers: kb });
    expect(identity.status).toBe(201);
    stored.identityUid = identity.body.uid as string;
    stored.runId = await createRun(c, key, { prompt: `Look the colour up ${marker}`, config: { mcp_servers: kb } });

    const a = `v2:${keyringOf(A).keys[0].id}`;
    expect(await storedUnder(c)).toEqual([a, 'v1', a, a, a]);
  });

  test('key-usage names what needs A; reencrypt puts it under B while the service runs; then nothing needs A', async () => {
    const c = before!;
    // A left out too early: what needs it is named by A's id (its fingerprint), as not configured.
    const early = await secretsCli(c, ring(['b', B]), 'key-usage');
    expect({ code: early.code, stderr: early.stderr }).toMatchObject({ code: 0 });
    expect(early.stdout).toMatch(new RegExp(`^ {2}${keyringOf(A).keys[0].id} +[1-9]\\d* +NOT CONFIGURED`, 'm'));
    expect(early.stdout).toMatch(/^ {2}enc:v1 +[1-9]\d* +NOT CONFIGURED/m);
    expect(early.stdout).not.toContain(A.toString('base64'));

    // A, named `a` in the ring, opens what was stored under its fingerprint and the enc:v1 value.
    const usage = await secretsCli(c, ring(['b', B], ['a', A]), 'key-usage');
    expect(usage.stdout).toMatch(/^ {2}a +([5-9]|\d\d+) +run reencrypt before removing it$/m);

    const reencrypt = await secretsCli(c, ring(['b', B], ['a', A]), 'reencrypt', '--batch-size', '50');
    expect({ code: reencrypt.code, stderr: reencrypt.stderr }).toMatchObject({ code: 0 });
    expect(reencrypt.stdout).toMatch(/^webhooks\.secret: [1-9]\d* re-encrypted under b, /m);
    expect(reencrypt.stdout).toMatch(/^webhook_events\.run\.config\.mcp_servers: [1-9]\d* re-encrypted under b, /m);
    expect(await storedUnder(c)).toEqual(['v2:b', 'v2:b', 'v2:b', 'v2:b', 'v2:b']);

    const done = await secretsCli(c, ring(['b', B], ['a', A]), 'key-usage');
    expect(done.stdout).toMatch(/^ {2}a +0 +no stored value needs it: it can be removed$/m);
    expect(done.stdout).toMatch(/^ {2}b +[1-9]\d* +newest: encrypts$/m);
  });

  test('with A removed everywhere: the worker calls the MCP server and signs the webhook, the API masks the credential', async () => {
    await before!.close();
    before = undefined;
    after = await createTestContext({
      env: { ...LOOPBACK, ...ring(['b', B]), TEMPORAL_TASK_QUEUE: stored.queue },
      worker: false,
    });
    const c = after;
    c.model.script(marker, (_req, call) =>
      call === 1
        ? { text: '', toolCalls: [{ name: 'mcp__kb__lookup', arguments: { key: 'colour' } }] }
        : { text: 'teal' },
    );
    await c.startWorker();
    await waitForState(c, stored.key, stored.runId, ['SUCCEEDED'], undefined, 120_000);
    // The MCP server answers 401 to any other Authorization: the worker decrypted it under B.
    expect(mcp!.calls).toContain('colour');
    // A delivery a worker with B alone signed with the secret the webhook's creation showed.
    const signedSucceeded = (r: ReceivedRequest) => {
      try {
        return (
          (new Webhook(stored.webhookSecret).verify(r.body, r.headers) as { data: RunBody }).data.state === 'SUCCEEDED'
        );
      } catch {
        return false;
      }
    };
    await receiver.until((requests) => requests.some(signedSucceeded), 'a signed delivery of SUCCEEDED', 60_000);
    // The API decrypts under B too, to mask the credential wherever a worker may have let it through.
    await c.dataSource.query(`UPDATE runs SET status_message = $2::jsonb WHERE run_id = $1`, [
      stored.runId,
      JSON.stringify({ message: `MCP server kb said: bad token ${MCP_TOKEN}`, error_code: 'invalid_request' }),
    ]);
    expect((await getRun(c, stored.key, stored.runId)).status_message).toEqual({
      message: 'MCP server kb said: bad token ***',
      error_code: 'invalid_request',
    });
  });
});
