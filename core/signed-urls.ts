import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** What a signed URL gives access to: a download of its kind, or a transcript page (`sessions`). */
export type SignedKind =
  'artifacts' | 'handoff' | 'transcripts' | 'conversation-transcripts' | 'checkpoints' | 'sessions';
export type DownloadKind = Exclude<SignedKind, 'sessions'>;

/** What signs URLs of one kind of use: the derived key, the public base URL and how long a URL works. */
export interface UrlSigner {
  key: Buffer;
  publicUrl: string;
  ttlSeconds: number;
}

/**
 * The key that signs URLs (downloads, transcript links), derived (HKDF-SHA256) from the service's
 * secrets key (SECRETS_ENCRYPTION_KEY): nothing new to configure, the same for the API instances
 * and the workers, and never the encryption key itself. (Its label predates transcript links;
 * changing it would void every URL out there.)
 */
export function urlSigningKey(secretsKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'agent-runs download urls v1', 32));
}

function signature(key: Buffer, kind: SignedKind, id: string, expires: number): Buffer {
  return createHmac('sha256', key).update(`${kind}\n${id}\n${expires}`).digest();
}

/** Unix seconds `ttlSeconds` from `now`. */
export function expiresIn(ttlSeconds: number, now: number = Date.now()): number {
  return Math.ceil(now / 1000) + ttlSeconds;
}

/** `expires={unix seconds}&signature={HMAC}`: the query that opens `id` (of `kind`) until `expires`. */
export function signedQuery(key: Buffer, kind: SignedKind, id: string, expires: number): string {
  return `expires=${expires}&signature=${signature(key, kind, id, expires).toString('base64url')}`;
}

/**
 * A URL that downloads `id` without an API key until `ttlSeconds` from now:
 * `{publicUrl}/downloads/{kind}/{id}?expires={unix seconds}&signature={HMAC}`.
 */
export function signedDownloadUrl(
  publicUrl: string,
  key: Buffer,
  kind: DownloadKind,
  id: string,
  ttlSeconds: number,
  now: number = Date.now(),
): { url: string; expiresAt: Date } {
  const expires = expiresIn(ttlSeconds, now);
  return {
    url: `${publicUrl}/downloads/${kind}/${id}?${signedQuery(key, kind, id, expires)}`,
    expiresAt: new Date(expires * 1000),
  };
}

export type SignatureCheck =
  { ok: true; expires: number } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired'; expiresAt?: Date };

/** Checks a signed URL's `expires` and `signature` (compared in constant time). */
export function checkUrlSignature(
  key: Buffer,
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
  const expected = Buffer.from(signature(key, kind, id, expires).toString('base64url'));
  const given = Buffer.from(signatureParam);
  if (!timingSafeEqual(given, expected)) return { ok: false, reason: 'bad_signature' };
  if (expires * 1000 <= now) return { ok: false, reason: 'expired', expiresAt: new Date(expires * 1000) };
  return { ok: true, expires };
}
