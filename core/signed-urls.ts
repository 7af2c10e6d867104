import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { SecretsKeyring } from './secrets-keyring';

/** What a signed URL gives access to: a download of its kind, or a transcript page (`sessions`). */
export type SignedKind =
  'artifacts' | 'handoff' | 'transcripts' | 'conversation-transcripts' | 'checkpoints' | 'sessions';
export type DownloadKind = Exclude<SignedKind, 'sessions'>;

/** The keys of signed URLs, newest first: the first signs; every one verifies. */
export type UrlSigningKeys = readonly [Buffer, ...Buffer[]];

/** What signs URLs of one kind of use: the derived keys, the public base URL and how long a URL works. */
export interface UrlSigner {
  keys: UrlSigningKeys;
  publicUrl: string;
  ttlSeconds: number;
}

/**
 * The key that signs URLs (downloads, transcript links), derived (HKDF-SHA256) from a key of the
 * service's secrets keyring: nothing new to configure, the same for the API instances and the
 * workers, and never the encryption key itself. (Its label predates transcript links and key
 * rotation; changing it would void every URL out there.)
 */
export function urlSigningKey(secretsKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'agent-runs download urls v1', 32));
}

/**
 * The signing keys of the ring's keys, newest first: URLs are signed under the newest, and one
 * signed under an older key (before a rotation) opens until it expires or its key leaves the ring.
 */
export function urlSigningKeys(ring: SecretsKeyring): UrlSigningKeys {
  const [newest, ...older] = ring.keys;
  return [urlSigningKey(newest.key), ...older.map((k) => urlSigningKey(k.key))];
}

function signature(key: Buffer, kind: SignedKind, id: string, expires: number): Buffer {
  return createHmac('sha256', key).update(`${kind}\n${id}\n${expires}`).digest();
}

/** Unix seconds `ttlSeconds` from `now`. */
export function expiresIn(ttlSeconds: number, now: number = Date.now()): number {
  return Math.ceil(now / 1000) + ttlSeconds;
}

/** `expires={unix seconds}&signature={HMAC}`: the query that opens `id` (of `kind`) until `expires`; signed under the newest key. */
export function signedQuery(keys: UrlSigningKeys, kind: SignedKind, id: string, expires: number): string {
  return `expires=${expires}&signature=${signature(keys[0], kind, id, expires).toString('base64url')}`;
}

/**
 * A URL that downloads `id` without an API key until `ttlSeconds` from now:
 * `{publicUrl}/downloads/{kind}/{id}?expires={unix seconds}&signature={HMAC}`.
 */
export function signedDownloadUrl(
  publicUrl: string,
  keys: UrlSigningKeys,
  kind: DownloadKind,
  id: string,
  ttlSeconds: number,
  now: number = Date.now(),
): { url: string; expiresAt: Date } {
  const expires = expiresIn(ttlSeconds, now);
  return {
    url: `${publicUrl}/downloads/${kind}/${id}?${signedQuery(keys, kind, id, expires)}`,
    expiresAt: new Date(expires * 1000),
  };
}

export type SignatureCheck =
  { ok: true; expires: number } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired'; expiresAt?: Date };

/** Checks a signed URL's `expires` and `signature` (compared in constant time) against each key. */
export function checkUrlSignature(
  keys: UrlSigningKeys,
  kind: SignedKind,
  id: string,
  expiresParam: unknown,
  signatureParam: unknown,
  now: number = Date.now(),
): SignatureCheck {
  if (typeof expiresParam !== 'string' || !/^\d{1,12}$/.test(expiresParam)) return { ok: false, reason: 'malformed' };
  if (typeof signatureParam !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(signatureParam)) {
    return { ok: false, reason: 'malformed' };
  }
  const expires = Number(expiresParam);
  // Compared as text: base64url's last character carries two unused bits, so decoded bytes would
  // accept four spellings of one signature.
  const given = Buffer.from(signatureParam);
  const signedBy = keys.filter((key) =>
    timingSafeEqual(given, Buffer.from(signature(key, kind, id, expires).toString('base64url'))),
  );
  if (signedBy.length === 0) return { ok: false, reason: 'bad_signature' };
  if (expires * 1000 <= now) return { ok: false, reason: 'expired', expiresAt: new Date(expires * 1000) };
  return { ok: true, expires };
}
