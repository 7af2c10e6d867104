import { canonicalReferenceUrl } from '../../core/external-references';

test('an external reference is stored and looked up under one canonical URL', () => {
  const canonical = 'https://github.com/acme/app/pull/12';
  for (const spelling of [
    'https://github.com/acme/app/pull/12',
    'HTTPS://GitHub.com/acme/app/pull/12/',
    'https://github.com:443/acme/app/pull/12#discussion_r1',
    '  https://github.com/acme/app/pull/12//  ',
  ]) {
    expect([spelling, canonicalReferenceUrl(spelling)]).toEqual([spelling, canonical]);
  }
  // The path's case and the query are the reference's own.
  expect(canonicalReferenceUrl('https://example.com/Docs/A?id=7&x=1')).toBe('https://example.com/Docs/A?id=7&x=1');
  expect(canonicalReferenceUrl('http://example.com')).toBe('http://example.com/');
});

test('what is no http(s) URL, or carries credentials, or is too long, is refused with why', () => {
  expect(() => canonicalReferenceUrl('not a url')).toThrow('"not a url" is not a URL');
  expect(() => canonicalReferenceUrl('ftp://example.com/x')).toThrow('the URL must be http or https');
  expect(() => canonicalReferenceUrl('https://user:pw@example.com/x')).toThrow('the URL must not carry credentials');
  expect(() => canonicalReferenceUrl(`https://example.com/${'a'.repeat(2100)}`)).toThrow('longer than 2048 bytes');
});
