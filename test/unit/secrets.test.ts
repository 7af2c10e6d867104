import { randomBytes } from 'node:crypto';
import {
  decryptMcpServers,
  decryptSecret,
  encryptMcpServers,
  encryptMcpServersKeepingRedacted,
  encryptSecret,
  parseSecretsKey,
  REDACTED,
  redactMcpServers,
} from '../../core/secrets';
import { idempotencyView, maskSecrets, redactRunConfig, runSecretValues } from '../../core/run-secrets';
import type { McpServerConfig } from '../../core/run-types';

const key = randomBytes(32);
const otherKey = randomBytes(32);

describe('parseSecretsKey', () => {
  test('takes 32 bytes as base64 (44 characters) or hex (64), around white space', () => {
    expect(parseSecretsKey(key.toString('base64'))).toEqual(key);
    expect(parseSecretsKey(` ${key.toString('hex')}\n`)).toEqual(key);
    expect(parseSecretsKey(key.toString('hex').toUpperCase())).toEqual(key);
  });

  test('refuses anything else, saying how to make a key and never repeating the value', () => {
    const wrong = [
      randomBytes(16).toString('base64'),
      randomBytes(31).toString('hex'),
      key.toString('base64url'),
      `${key.toString('base64').slice(0, -1)}`,
      'hunter2-hunter2-hunter2-hunter2-hunter2-hunt',
      '',
    ];
    for (const value of wrong) {
      let message = '';
      try {
        parseSecretsKey(value);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^SECRETS_ENCRYPTION_KEY must be 32 random bytes .*`openssl rand -base64 32`\.$/);
      if (value) expect(message).not.toContain(value);
    }
  });
});

describe('encryptSecret and decryptSecret', () => {
  test('round trip, for any text, with a fresh IV each time', () => {
    for (const value of ['', 'token', 'Bearer sk-ünïcødé-😀', 'x'.repeat(10_000)]) {
      const stored = encryptSecret(value, key);
      expect(stored).toMatch(/^enc:v1:[A-Za-z0-9_-]+$/);
      expect(stored).not.toContain(value || 'never');
      expect(decryptSecret(stored, key)).toBe(value);
    }
    expect(encryptSecret('same', key)).not.toBe(encryptSecret('same', key));
  });

  test('a value stored before encryption existed is returned as it is', () => {
    expect(decryptSecret('plain-old-token', key)).toBe('plain-old-token');
  });

  test('another key, or any altered byte, is an error rather than a wrong value', () => {
    const stored = encryptSecret('secret value', key);
    expect(() => decryptSecret(stored, otherKey)).toThrow(
      'Cannot decrypt a stored secret: it was encrypted with another SECRETS_ENCRYPTION_KEY, or altered since.',
    );
    const raw = Buffer.from(stored.slice('enc:v1:'.length), 'base64url');
    // IV, tag and ciphertext: each byte matters.
    for (const index of [0, 11, 12, 27, 28, raw.length - 1]) {
      const tampered = Buffer.from(raw);
      tampered[index] = tampered[index]! ^ 0x01;
      expect(() => decryptSecret(`enc:v1:${tampered.toString('base64url')}`, key)).toThrow(/altered since/);
    }
  });

  test('a truncated value says so', () => {
    expect(() => decryptSecret(`enc:v1:${randomBytes(27).toString('base64url')}`, key)).toThrow(
      'Cannot decrypt a stored secret: the value is truncated.',
    );
  });
});

describe('MCP server credentials', () => {
  const servers: Record<string, McpServerConfig> = {
    github: { command: 'gh-mcp', args: ['--stdio'], env: { GITHUB_TOKEN: 'ghp_secret123' } },
    search: { url: 'https://mcp.example.com', headers: { Authorization: 'Bearer sk-search-456' } },
    plain: { command: 'local-mcp' },
  };

  test('env and headers values are encrypted, names, keys and other fields kept; decrypting restores them', () => {
    const stored = encryptMcpServers(servers, key);
    expect(stored.github).toMatchObject({ command: 'gh-mcp', args: ['--stdio'] });
    expect(stored.github!.env!.GITHUB_TOKEN).toMatch(/^enc:v1:/);
    expect(stored.search!.headers!.Authorization).toMatch(/^enc:v1:/);
    expect(stored.plain).toEqual({ command: 'local-mcp' });
    expect(JSON.stringify(stored)).not.toMatch(/ghp_secret123|sk-search-456/);
    expect(decryptMcpServers(stored, key)).toEqual(servers);
    expect(encryptMcpServers(undefined, key)).toBeUndefined();
  });

  test('responses show every value as "***"', () => {
    expect(redactMcpServers(servers)).toEqual({
      github: { command: 'gh-mcp', args: ['--stdio'], env: { GITHUB_TOKEN: REDACTED } },
      search: { url: 'https://mcp.example.com', headers: { Authorization: REDACTED } },
      plain: { command: 'local-mcp' },
    });
    const config = { model_id: 'openai/gpt-4o', idle_timeout_minutes: 10 };
    expect(redactRunConfig({ ...config, mcp_servers: servers })).toEqual({
      ...config,
      mcp_servers: redactMcpServers(servers),
    });
    expect(redactRunConfig(config)).toBe(config);
  });

  test('an update may send "***" back to keep a stored value, but not for a value never stored', () => {
    const stored = encryptMcpServers(servers, key);
    const update = {
      github: { command: 'gh-mcp', env: { GITHUB_TOKEN: REDACTED, EXTRA: 'new-value' } },
      search: servers.search!,
    };
    const kept = encryptMcpServersKeepingRedacted(update, stored, key);
    if (!('servers' in kept)) throw new Error(`unexpected unknown mask ${kept.unknownMask}`);
    expect(kept.servers.github!.env!.GITHUB_TOKEN).toBe(stored.github!.env!.GITHUB_TOKEN);
    expect(decryptMcpServers(kept.servers, key)).toEqual({
      github: { command: 'gh-mcp', env: { GITHUB_TOKEN: 'ghp_secret123', EXTRA: 'new-value' } },
      search: servers.search,
    });

    const unknown = { search: { url: 'https://mcp.example.com', headers: { 'X-Key': REDACTED } } };
    expect(encryptMcpServersKeepingRedacted(unknown, stored, key)).toEqual({ unknownMask: 'search.headers.X-Key' });
  });

  test("a run's secret values, and a bearer's token alone, longest first; short and undecryptable ones left out", () => {
    const stored: Record<string, McpServerConfig> = encryptMcpServers(
      { ...servers, short: { command: 'x', env: { LEVEL: 'warn' } } },
      key,
    );
    stored.plain = { command: 'y', env: { OLD: 'plaintext-old' } };
    stored.foreign = { command: 'z', env: { T: encryptSecret('under-another-key', otherKey) } };
    expect(runSecretValues({ model_id: 'm', idle_timeout_minutes: 10, mcp_servers: stored }, key)).toEqual([
      'Bearer sk-search-456',
      'ghp_secret123',
      'sk-search-456',
      'plaintext-old',
    ]);
  });

  test('maskSecrets replaces every occurrence in strings at any depth, and keeps Dates', () => {
    const at = new Date('2025-01-01T00:00:00Z');
    const secrets = ['Bearer sk-search-456', 'sk-search-456'];
    const masked = maskSecrets(
      { text: 'sent Bearer sk-search-456, then sk-search-456', nested: [{ v: 'sk-search-456!' }], at, n: 3 },
      secrets,
    );
    expect(masked).toEqual({ text: 'sent ***, then ***', nested: [{ v: '***!' }], at, n: 3 });
    expect(masked.at).toBe(at);
    const value = { a: 'sk-search-456' };
    expect(maskSecrets(value, [])).toBe(value);
  });

  test('the idempotency hash sees a keyed HMAC of each credential, never the credential', () => {
    const body = { prompt: 'p', config: { mcp_servers: servers } };
    const view = idempotencyView(body, key);
    const token = view.config!.mcp_servers!.github!.env!.GITHUB_TOKEN!;
    expect(token).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(JSON.stringify(view)).not.toMatch(/ghp_secret123|sk-search-456/);
    // The same body and key give the same view (so a retry matches); another key another one.
    expect(idempotencyView(body, key)).toEqual(view);
    expect(idempotencyView(body, otherKey).config!.mcp_servers!.github!.env!.GITHUB_TOKEN).not.toBe(token);
    expect(view.config!.mcp_servers!.plain).toEqual({ command: 'local-mcp' });
    expect(idempotencyView({ prompt: 'p' }, key)).toEqual({ prompt: 'p' });
  });
});
