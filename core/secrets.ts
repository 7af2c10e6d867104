import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { McpServerConfig } from './run-types';

/** What every request-supplied credential (MCP `env` and `headers` values) is shown as. */
export const REDACTED = '***';

const PREFIX = 'enc:v1:';
const ALGORITHM = 'aes-256-gcm';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

const KEY_RULE =
  'SECRETS_ENCRYPTION_KEY must be 32 random bytes written as base64 (44 characters) or hex (64 characters); ' +
  'generate one with `openssl rand -base64 32`.';

/** The 32-byte key of SECRETS_ENCRYPTION_KEY, from base64 (44 characters) or hex (64 characters). */
export function parseSecretsKey(text: string): Buffer {
  const value = text.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(value)) key = Buffer.from(value, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=$/.test(value)) key = Buffer.from(value, 'base64');
  // The message never repeats the value: it is a secret even when malformed.
  if (key?.length !== KEY_BYTES) throw new Error(KEY_RULE);
  return key;
}

/** AES-256-GCM with a random IV: `enc:v1:<base64url(iv | tag | ciphertext)>`. */
export function encryptSecret(value: string, key: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv);
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
}

/**
 * Inverse of encryptSecret. A value without the `enc:v1:` prefix (stored before encryption
 * existed) is returned as it is; a value altered since, or encrypted under another key, throws.
 */
export function decryptSecret(value: string, key: Buffer): string {
  if (!value.startsWith(PREFIX)) return value;
  const raw = Buffer.from(value.slice(PREFIX.length), 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('Cannot decrypt a stored secret: the value is truncated.');
  const decipher = createDecipheriv(ALGORITHM, key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new Error(
      'Cannot decrypt a stored secret: it was encrypted with another SECRETS_ENCRYPTION_KEY, or altered since.',
    );
  }
}

type McpServers = Record<string, McpServerConfig> | undefined;

const mapValues = (values: Record<string, string>, fn: (value: string) => string) =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [name, fn(value)]));

/** The same servers with every `env` and `headers` value passed through `fn`; names and keys kept. */
function mapSecretValues<T extends McpServers>(servers: T, fn: (value: string) => string): T {
  if (servers === undefined) return servers;
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => {
      const mapped: McpServerConfig = { ...server };
      if (server.env) mapped.env = mapValues(server.env, fn);
      if (server.headers) mapped.headers = mapValues(server.headers, fn);
      return [name, mapped];
    }),
  ) as T;
}

/** MCP servers as they are stored: `env` and `headers` values encrypted. */
export function encryptMcpServers<T extends McpServers>(servers: T, key: Buffer): T {
  return mapSecretValues(servers, (value) => encryptSecret(value, key));
}

/** MCP servers as a worker uses them: `env` and `headers` values decrypted (plaintext rows pass through). */
export function decryptMcpServers<T extends McpServers>(servers: T, key: Buffer): T {
  return mapSecretValues(servers, (value) => decryptSecret(value, key));
}

/** MCP servers as every response shows them: each `env` and `headers` value is `"***"`. */
export function redactMcpServers<T extends McpServers>(servers: T): T {
  return mapSecretValues(servers, () => REDACTED);
}

/**
 * MCP servers as they are stored after an update: each `env` and `headers` value encrypted, but
 * one given as REDACTED keeps the value `stored` has at the same server and key. Returns the path
 * of the first mask with nothing stored behind it instead.
 */
export function encryptMcpServersKeepingRedacted(
  servers: Record<string, McpServerConfig>,
  stored: Record<string, McpServerConfig>,
  key: Buffer,
): { servers: Record<string, McpServerConfig> } | { unknownMask: string } {
  let unknownMask: string | undefined;
  const result = Object.fromEntries(
    Object.entries(servers).map(([name, server]) => {
      const mapped: McpServerConfig = { ...server };
      for (const field of ['env', 'headers'] as const) {
        const values = server[field];
        if (!values) continue;
        mapped[field] = Object.fromEntries(
          Object.entries(values).map(([k, value]) => {
            if (value !== REDACTED) return [k, encryptSecret(value, key)];
            const kept = stored[name]?.[field]?.[k];
            if (kept === undefined) unknownMask ??= `${name}.${field}.${k}`;
            return [k, kept ?? ''];
          }),
        );
      }
      return [name, mapped];
    }),
  );
  return unknownMask === undefined ? { servers: result } : { unknownMask };
}
