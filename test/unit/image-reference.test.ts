import { IMAGE_REFERENCE_PATTERN, isRegistryAllowed, parseImageReference } from '../../core/image-reference';

test.each([
  ['python', { registry: 'docker.io', repository: 'library/python' }],
  ['python:3.12-slim', { registry: 'docker.io', repository: 'library/python', tag: '3.12-slim' }],
  ['acme/builder:1.4', { registry: 'docker.io', repository: 'acme/builder', tag: '1.4' }],
  ['ghcr.io/acme/tools/builder:v2', { registry: 'ghcr.io', repository: 'acme/tools/builder', tag: 'v2' }],
  ['Registry.Internal:5000/tools', { registry: 'registry.internal:5000', repository: 'tools' }],
  ['localhost/base', { registry: 'localhost', repository: 'base' }],
  [
    `alpine@sha256:${'a'.repeat(64)}`,
    { registry: 'docker.io', repository: 'library/alpine', digest: `sha256:${'a'.repeat(64)}` },
  ],
  [
    `ghcr.io/acme/app:1.0@sha256:${'b'.repeat(64)}`,
    { registry: 'ghcr.io', repository: 'acme/app', tag: '1.0', digest: `sha256:${'b'.repeat(64)}` },
  ],
  ['my_org/my__app-x.y', { registry: 'docker.io', repository: 'my_org/my__app-x.y' }],
])('%s is %j', (text, image) => {
  expect(parseImageReference(text)).toEqual({ ok: true, image });
});

test.each([
  ['', /1 to 500 characters/],
  [' python', /spaces/],
  ['Python', /repository part "Python"/],
  ['acme//app', /repository part ""/],
  ['python:', /tag ""/],
  ['python:-x', /tag "-x"/],
  ['python@sha256:abc', /digest "sha256:abc"/],
  ['python@md5:0123', /digest/],
  ['bad_host.io:99x/app', /registry "bad_host.io:99x"/],
  ['acme/app:1.0:2', /repository part "app:1.0"/],
  ['../etc/passwd', /registry "\.\."/],
])('%j is refused: %s', (text, problem) => {
  const parsed = parseImageReference(text);
  expect(parsed.ok).toBe(false);
  expect(!parsed.ok && parsed.problem).toMatch(problem);
});

test('registries: allowed by host and port, Docker Hub by any of its names, all when none are listed', () => {
  expect(isRegistryAllowed('ghcr.io', [])).toBe(true);
  expect(isRegistryAllowed('ghcr.io', ['ghcr.io'])).toBe(true);
  expect(isRegistryAllowed('registry.internal:5000', ['registry.internal'])).toBe(false);
  expect(isRegistryAllowed('registry.internal:5000', ['registry.internal:5000'])).toBe(true);
  expect(isRegistryAllowed('docker.io', ['index.docker.io'])).toBe(true);
  expect(isRegistryAllowed('evil.io', ['ghcr.io', 'docker.io'])).toBe(false);
});

test('the OpenAPI pattern takes only what the parser takes', () => {
  const pattern = new RegExp(IMAGE_REFERENCE_PATTERN);
  for (const text of [
    'python',
    'my.app',
    'acme/my.app',
    'ghcr.io/acme/app:1.0',
    'localhost:5000/x',
    `a.b/c@sha256:${'0'.repeat(64)}`,
  ]) {
    expect([text, pattern.test(text), parseImageReference(text).ok]).toEqual([text, true, true]);
  }
  for (const text of ['UPPER/x', 'a-.io/x', 'a_b.c/x', 'x:', 'host:99/x:-t', 'a//b']) {
    expect([text, pattern.test(text)]).toEqual([text, false]);
  }
});
