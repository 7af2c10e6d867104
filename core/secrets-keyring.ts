import { hkdfSync } from 'node:crypto';

/** One key of the ring: 32 bytes, and the id that values encrypted under it carry (`enc:v2:<id>:…`). */
export interface SecretsKey {
  readonly id: string;
  readonly key: Buffer;
}

/**
 * The keys of stored secrets and signed URLs, newest first: the newest encrypts and signs; every
 * one decrypts and verifies, so what was stored or signed before a rotation keeps working.
 */
export interface SecretsKeyring {
  readonly keys: readonly [SecretsKey, ...SecretsKey[]];
}

const KEY_BYTES = 32;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const FINGERPRINT_ID = /^fp-[0-9a-f]{12}$/;

const keyRule = (what: string) =>
  `${what} must be 32 random bytes written as base64 (44 characters) or hex (64 characters); ` +
  'generate one with `openssl rand -base64 32`.';

/** A 32-byte key from base64 (44 characters) or hex (64 characters); `what` names it in the error. */
export function parseSecretsKey(text: string, what = 'SECRETS_ENCRYPTION_KEY'): Buffer {
  const value = text.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(value)) key = Buffer.from(value, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=$/.test(value)) key = Buffer.from(value, 'base64');
  // The message never repeats the value: it is a secret even when malformed.
  if (key?.length !== KEY_BYTES) throw new Error(keyRule(what));
  return key;
}

/**
 * The id of a key given without one (SECRETS_ENCRYPTION_KEY, the key file): `fp-` and 12 hex
 * digits derived from the key (HKDF, so they tell nothing of it). Every key of a ring also
 * answers to it, so values stored under a lone key stay readable once it joins a ring under a
 * name of the operator's choosing.
 */
export function fingerprintId(key: Buffer): string {
  return `fp-${Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'agent-runs secrets key id', 6)).toString('hex')}`;
}

/** The ring of a lone key: SECRETS_ENCRYPTION_KEY, or the key file of `npm start`. */
export function keyringOf(key: Buffer): SecretsKeyring {
  return { keys: [{ id: fingerprintId(key), key }] };
}

/** The key a stored value names by `id`: the ring's key of that id, else the one whose fingerprint it is. */
export function findSecretsKey(ring: SecretsKeyring, id: string): SecretsKey | undefined {
  return ring.keys.find((k) => k.id === id) ?? ring.keys.find((k) => fingerprintId(k.key) === id);
}

/** The ids of the ring, newest first, for messages. */
export const keyringIds = (ring: SecretsKeyring): string => ring.keys.map((k) => k.id).join(', ');

/**
 * SECRETS_ENCRYPTION_KEYS: `<id>=<key>` entries separated by commas, newest first; ids are 1-32
 * letters, digits, `_` or `-`. Errors name an entry by its position or valid id, never by its key.
 */
export function parseSecretsKeyring(text: string): SecretsKeyring {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const keys = entries.map((entry, index) => parseEntry(entry, index + 1));
  const [newest, ...older] = keys;
  if (!newest) throw new Error('SECRETS_ENCRYPTION_KEYS must hold at least one `<id>=<key>` entry.');
  for (const [index, { id, key }] of keys.entries()) {
    const earlier = keys.slice(0, index);
    if (earlier.some((k) => k.id === id)) throw new Error(`SECRETS_ENCRYPTION_KEYS: the id "${id}" is given twice.`);
    const same = earlier.find((k) => k.key.equals(key));
    if (same) throw new Error(`SECRETS_ENCRYPTION_KEYS: "${same.id}" and "${id}" are the same key.`);
  }
  return { keys: [newest, ...older] };
}

function parseEntry(entry: string, position: number): SecretsKey {
  const at = `SECRETS_ENCRYPTION_KEYS: entry ${position}`;
  const equals = entry.indexOf('=');
  const id = equals > 0 ? entry.slice(0, equals).trim() : '';
  // An id that is no id may be part of a key: the message does not repeat it.
  if (!KEY_ID.test(id)) {
    throw new Error(`${at} must be \`<id>=<key>\`, the id 1-32 letters, digits, \`_\` or \`-\` (e.g. 2026-06=<key>).`);
  }
  const key = parseSecretsKey(entry.slice(equals + 1), `${at} ("${id}")`);
  if (FINGERPRINT_ID.test(id) && id !== fingerprintId(key)) {
    throw new Error(
      `${at}: ids of the form fp-<12 hex digits> are fingerprints of keys, and "${id}" is not its key's.`,
    );
  }
  return { id, key };
}

/**
 * The ring the two variables make: SECRETS_ENCRYPTION_KEYS when set (SECRETS_ENCRYPTION_KEY, if
 * also set, must be one of its keys: then it changes nothing), else SECRETS_ENCRYPTION_KEY alone,
 * else undefined (the key file).
 */
export function secretsKeyringFrom(single: string | undefined, ring: string | undefined): SecretsKeyring | undefined {
  if (ring === undefined) return single === undefined ? undefined : keyringOf(parseSecretsKey(single));
  const parsed = parseSecretsKeyring(ring);
  if (single !== undefined) {
    const key = parseSecretsKey(single);
    if (!parsed.keys.some((k) => k.key.equals(key))) {
      throw new Error(
        'SECRETS_ENCRYPTION_KEY is set beside SECRETS_ENCRYPTION_KEYS but is none of its keys: ' +
          'unset it, or add its key to SECRETS_ENCRYPTION_KEYS.',
      );
    }
  }
  return parsed;
}
