import { hkdfSync } from 'node:crypto';
import type { SecretsKeyring } from '../../core/secrets-keyring';
import {
  checkUrlSignature,
  expiresIn,
  signedDownloadUrl,
  signedQuery,
  urlSigningKey,
  urlSigningKeys,
} from '../../core/signed-urls';

const key = [urlSigningKey(Buffer.alloc(32, 7))] as const;
const now = Date.UTC(2026, 0, 1);

function signed(): { expires: string; signature: string } {
  const { url } = signedDownloadUrl('http://api', key, 'artifacts', 'a1', 60, now);
  const query = new URL(url).searchParams;
  return { expires: query.get('expires')!, signature: query.get('signature')! };
}

test('a link as signed is accepted until it expires', () => {
  const { expires, signature } = signed();
  expect(checkUrlSignature(key, 'artifacts', 'a1', expires, signature, now)).toEqual({
    ok: true,
    expires: Number(expires),
  });
  expect(checkUrlSignature(key, 'artifacts', 'a1', expires, signature, now + 61_000)).toMatchObject({
    ok: false,
    reason: 'expired',
  });
});

test('another spelling of the same signature bytes is refused', () => {
  const { expires, signature } = signed();
  // The last base64url character of a 32-byte value carries two unused bits: flipping them keeps
  // the decoded bytes and must still be refused.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(signature.at(-1)!);
  const respelled = signature.slice(0, -1) + alphabet[last ^ 1];
  expect(Buffer.from(respelled, 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
  expect(checkUrlSignature(key, 'artifacts', 'a1', expires, respelled, now)).toEqual({
    ok: false,
    reason: 'bad_signature',
  });
});

test('a signature for another object or kind is refused', () => {
  const { expires, signature } = signed();
  expect(checkUrlSignature(key, 'artifacts', 'a2', expires, signature, now)).toMatchObject({ ok: false });
  expect(checkUrlSignature(key, 'handoff', 'a1', expires, signature, now)).toMatchObject({ ok: false });
  // A transcript link is of a kind of its own: a download's signature never opens one.
  expect(checkUrlSignature(key, 'sessions', 'a1', expires, signature, now)).toMatchObject({
    ok: false,
    reason: 'bad_signature',
  });
});

test('a signed query opens its own id and kind until it expires, and names its expiry', () => {
  const expires = expiresIn(60, now);
  const query = new URLSearchParams(signedQuery(key, 'sessions', 's1', expires));
  expect([...query.keys()]).toEqual(['expires', 'signature']);
  const check = (id: string, at: number) =>
    checkUrlSignature(key, 'sessions', id, query.get('expires'), query.get('signature'), at);
  expect(check('s1', now)).toEqual({ ok: true, expires });
  expect(check('s1', expires * 1000)).toEqual({ ok: false, reason: 'expired', expiresAt: new Date(expires * 1000) });
  expect(check('s2', now)).toEqual({ ok: false, reason: 'bad_signature' });
  expect(checkUrlSignature(key, 'sessions', 's1', undefined, undefined, now)).toEqual({
    ok: false,
    reason: 'malformed',
  });
  // Another service's key (another SECRETS_ENCRYPTION_KEY) signs other links.
  const other = [urlSigningKey(Buffer.alloc(32, 8))] as const;
  expect(checkUrlSignature(other, 'sessions', 's1', query.get('expires'), query.get('signature'), now)).toMatchObject({
    ok: false,
  });
});

describe('across a rotation of the secrets key', () => {
  const keyA = Buffer.alloc(32, 7);
  const keyB = Buffer.alloc(32, 9);
  const before: SecretsKeyring = { keys: [{ id: 'a', key: keyA }] };
  const during: SecretsKeyring = {
    keys: [
      { id: 'b', key: keyB },
      { id: 'a', key: keyA },
    ],
  };
  const after: SecretsKeyring = { keys: [{ id: 'b', key: keyB }] };

  test('the signing key of a key is what it was before keyrings: URLs signed then still open', () => {
    expect(urlSigningKeys(before)).toEqual(key);
    // The label of the HKDF is fixed: a changed label would void every URL out there.
    expect(urlSigningKey(keyA).toString('hex')).toBe(
      Buffer.from(hkdfSync('sha256', keyA, Buffer.alloc(0), 'agent-runs download urls v1', 32)).toString('hex'),
    );
  });

  test('a URL signed under the old key opens after the rotation until it expires; new ones are signed under the new key', () => {
    const { url } = signedDownloadUrl('http://api', urlSigningKeys(before), 'artifacts', 'a1', 60, now);
    const query = new URL(url).searchParams;
    const check = (ring: SecretsKeyring, at: number) =>
      checkUrlSignature(urlSigningKeys(ring), 'artifacts', 'a1', query.get('expires'), query.get('signature'), at);
    expect(check(during, now)).toEqual({ ok: true, expires: Number(query.get('expires')) });
    expect(check(during, now + 61_000)).toMatchObject({ ok: false, reason: 'expired' });
    // Once the old key leaves the ring, its URLs no longer open, expired or not.
    expect(check(after, now)).toEqual({ ok: false, reason: 'bad_signature' });

    const fresh = new URL(signedDownloadUrl('http://api', urlSigningKeys(during), 'artifacts', 'a1', 60, now).url);
    const signature = fresh.searchParams.get('signature');
    expect(signature).not.toBe(query.get('signature'));
    const expires = fresh.searchParams.get('expires');
    expect(checkUrlSignature(urlSigningKeys(after), 'artifacts', 'a1', expires, signature, now)).toMatchObject({
      ok: true,
    });
    expect(checkUrlSignature(urlSigningKeys(before), 'artifacts', 'a1', expires, signature, now)).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });
});
