import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** What a signed download URL gives access to. */
export type DownloadKind = 'artifacts' | 'handoff' | 'transcripts' | 'conversation-transcripts';

/**
 * The key that signs download URLs, derived (HKDF-SHA256) from the service's secrets key
 * (SECRETS_ENCRYPTION_KEY): nothing new to configure, the same for the API instances, and never
 * the encryption key itself.
 */
export function downloadSigningKey(secretsKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'agent-runs download urls v1', 32));
}

function signature(key: Buffer, kind: DownloadKind, id: string, expires: number): Buffer {
  return createHmac('sha256', key).update(`${kind}\n${id}\n${expires}`).digest();
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
  const expires = Math.ceil(now / 1000) + ttlSeconds;
  const sig = signature(key, kind, id, expires).toString('base64url');
  return {
    url: `${publicUrl}/downloads/${kind}/${id}?expires=${expires}&signature=${sig}`,
    expiresAt: new Date(expires * 1000),
  };
}

export type DownloadCheck =
  { ok: true } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired'; expiresAt?: Date };

/** Checks a download URL's `expires` and `signature` (compared in constant time). */
export function checkDownloadSignature(
  key: Buffer,
  kind: DownloadKind,
  id: string,
  expiresParam: unknown,
  signatureParam: unknown,
  now: number = Date.now(),
): DownloadCheck {
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
  return { ok: true };
}
