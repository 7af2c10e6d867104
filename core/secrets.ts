import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { McpServerConfig } from './run-types';
import { findSecretsKey, keyringIds, type SecretsKey, type SecretsKeyring } from './secrets-keyring';

/** What every request-supplied credential (MCP `env` and `headers` values) is shown as. */
export const REDACTED = '***';

const V1 = 'enc:v1:';
const V2 = 'enc:v2:';
const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const V2_VALUE = /^enc:v2:([A-Za-z0-9_-]{1,32}):([A-Za-z0-9_-]*)$/;

/** Why a stored secret cannot be read: its key is not in the ring, or the value is damaged. */
export type DecryptionFailure = 'missing_key' | 'altered';

/** A stored secret that cannot be decrypted; the message names the key id, never a value. */
export class SecretDecryptionError extends Error {
  constructor(
    message: string,
    readonly failure: DecryptionFailure,
  ) {
    super(`Cannot decrypt a stored secret: ${message}`);
  }
}

/**
 * AES-256-GCM under the ring's newest key, with a random IV:
 * `enc:v2:<key id>:<base64url(iv | tag | ciphertext)>`. The prefix with the id is authenticated
 * too (GCM's additional data), so a value relabelled with another id never decrypts.
 */
export function encryptSecret(value: string, ring: SecretsKeyring): string {
  const { id, key } = ring.keys[0];
  const prefix = `${V2}${id}:`;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv).setAAD(Buffer.from(prefix));
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return prefix + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
}

/**
 * Inverse of encryptSecret. An enc:v2 value is opened by the key its id names; an enc:v1 value
 * (written before keys had ids, under the one key there was) by whichever key of the ring opens
 * it. A value without a prefix (stored before encryption existed) is returned as it is. A key
 * not in the ring, or a value altered since, throws a SecretDecryptionError.
 */
export function decryptSecret(value: string, ring: SecretsKeyring): string {
  if (value.startsWith(V1)) return decryptV1(value.slice(V1.length), ring);
  if (!value.startsWith(V2)) return value;
  const match = V2_VALUE.exec(value);
  if (!match) throw new SecretDecryptionError('the value is malformed.', 'altered');
  const [, keyId, body] = match as unknown as [string, string, string];
  const key = findSecretsKey(ring, keyId);
  if (!key) {
    throw new SecretDecryptionError(
      `it is encrypted under the key "${keyId}", which is not among the configured keys (${keyringIds(ring)}); ` +
        'add that key back to SECRETS_ENCRYPTION_KEYS, then re-encrypt (`npm run secrets -- reencrypt`) before removing it.',
      'missing_key',
    );
  }
  const opened = open(body, key.key, Buffer.from(`${V2}${keyId}:`));
  if (opened !== undefined) return opened;
  throw new SecretDecryptionError(`it was altered since it was stored under the key "${keyId}".`, 'altered');
}

/** Which key a stored value needs: none (plain text), a key of the ring, or one the ring lacks (`keyId`: the id it names, if any). */
export type KeyUse = { kind: 'plaintext' } | { kind: 'ring'; key: SecretsKey } | { kind: 'missing'; keyId?: string };

export function keyUse(value: string, ring: SecretsKeyring): KeyUse {
  if (value.startsWith(V1)) {
    const key = ring.keys.find((k) => opens(value.slice(V1.length), k.key));
    return key ? { kind: 'ring', key } : { kind: 'missing' };
  }
  if (!value.startsWith(V2)) return { kind: 'plaintext' };
  const keyId = V2_VALUE.exec(value)?.[1];
  const key = keyId === undefined ? undefined : findSecretsKey(ring, keyId);
  return key ? { kind: 'ring', key } : { kind: 'missing', keyId };
}

/**
 * `value` as encryptSecret stores a value now, under the ring's newest key: the same string when
 * it already is; plain text is encrypted. Throws as decryptSecret does.
 */
export function reencryptSecret(value: string, ring: SecretsKeyring): string {
  const keyId = V2_VALUE.exec(value)?.[1];
  if (keyId !== undefined && findSecretsKey(ring, keyId) === ring.keys[0]) return value;
  return encryptSecret(decryptSecret(value, ring), ring);
}

function decryptV1(body: string, ring: SecretsKeyring): string {
  for (const { key } of ring.keys) {
    const opened = open(body, key);
    if (opened !== undefined) return opened;
  }
  throw new SecretDecryptionError(
    `no configured key (${keyringIds(ring)}) opens this enc:v1 value, which names no key: it was encrypted ` +
      'with a key since removed, or altered since.',
    'missing_key',
  );
}

const opens = (body: string, key: Buffer): boolean => {
  try {
    return open(body, key) !== undefined;
  } catch {
    return false;
  }
};

/** The plaintext of `iv | tag | ciphertext` (base64url) under `key`, or undefined when it does not authenticate. */
function open(body: string, key: Buffer, aad?: Buffer): string | undefined {
  const raw = Buffer.from(body, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretDecryptionError('the value is truncated.', 'altered');
  const decipher = createDecipheriv(ALGORITHM, key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (aad) decipher.setAAD(aad);
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

type McpServers = Record<string, McpServerConfig> | undefined;

const mapValues = (values: Record<string, string>, fn: (value: string) => string) =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [name, fn(value)]));

/** The same servers with every `env` and `headers` value passed through `fn`; names and keys kept. */
export function mapSecretValues<T extends McpServers>(servers: T, fn: (value: string) => string): T {
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
export function encryptMcpServers<T extends McpServers>(servers: T, ring: SecretsKeyring): T {
  return mapSecretValues(servers, (value) => encryptSecret(value, ring));
}

/** MCP servers as a worker uses them: `env` and `headers` values decrypted (plaintext rows pass through). */
export function decryptMcpServers<T extends McpServers>(servers: T, ring: SecretsKeyring): T {
  return mapSecretValues(servers, (value) => decryptSecret(value, ring));
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
  ring: SecretsKeyring,
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
            if (value !== REDACTED) return [k, encryptSecret(value, ring)];
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
