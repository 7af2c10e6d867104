import { checkUrlSignature, urlSigningKey } from '../../core/signed-urls';
import { sessionLink } from '../../services/views/run-item';

const signer = {
  keys: [urlSigningKey(Buffer.alloc(32, 1))] as const,
  publicUrl: 'https://runs.example',
  ttlSeconds: 3600,
};
const session = 'S'.repeat(32);

test('a session_link opens its own session until SESSION_LINK_TTL_SECONDS after the read that signed it', () => {
  const readAt = Date.UTC(2026, 0, 1, 12);
  const link = new URL(sessionLink(signer, session, new Date(readAt)));
  expect(`${link.origin}${link.pathname}`).toBe(`https://runs.example/sessions/${session}`);
  const check = (sessionId: string, at: number) =>
    checkUrlSignature(
      signer.keys,
      'sessions',
      sessionId,
      link.searchParams.get('expires'),
      link.searchParams.get('signature'),
      at,
    );
  expect(check(session, readAt + 3_599_000)).toMatchObject({ ok: true });
  expect(check(session, readAt + 3_600_000)).toMatchObject({ ok: false, reason: 'expired' });
  expect(check('T'.repeat(32), readAt)).toEqual({ ok: false, reason: 'bad_signature' });
  // A later read signs a link that lasts from then.
  const later = new URL(sessionLink(signer, session, new Date(readAt + 60_000)));
  expect(Number(later.searchParams.get('expires')) - Number(link.searchParams.get('expires'))).toBe(60);
});
