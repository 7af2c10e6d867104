import { checkDownloadSignature, downloadSigningKey, signedDownloadUrl } from '../core/download-urls';

const key = downloadSigningKey(Buffer.alloc(32, 7));
const now = Date.UTC(2026, 0, 1);

function signed(): { expires: string; signature: string } {
  const { url } = signedDownloadUrl('http://api', key, 'artifacts', 'a1', 60, now);
  const query = new URL(url).searchParams;
  return { expires: query.get('expires')!, signature: query.get('signature')! };
}

test('a link as signed is accepted until it expires', () => {
  const { expires, signature } = signed();
  expect(checkDownloadSignature(key, 'artifacts', 'a1', expires, signature, now)).toEqual({ ok: true });
  expect(checkDownloadSignature(key, 'artifacts', 'a1', expires, signature, now + 61_000)).toMatchObject({
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
  expect(checkDownloadSignature(key, 'artifacts', 'a1', expires, respelled, now)).toEqual({
    ok: false,
    reason: 'bad_signature',
  });
});

test('a signature for another object or kind is refused', () => {
  const { expires, signature } = signed();
  expect(checkDownloadSignature(key, 'artifacts', 'a2', expires, signature, now)).toMatchObject({ ok: false });
  expect(checkDownloadSignature(key, 'handoff', 'a1', expires, signature, now)).toMatchObject({ ok: false });
});
