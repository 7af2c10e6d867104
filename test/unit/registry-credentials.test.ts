import { classifySkopeoError } from '../../activities/images/image-pull-error';
import { parseRegistryCredential } from '../../core/registry-credentials';

test('a registry credential is username:password@registry; the password may hold : and @', () => {
  expect(parseRegistryCredential('ci-bot:s3cr:et@x@ghcr.io')).toEqual({
    registry: 'ghcr.io',
    username: 'ci-bot',
    password: 's3cr:et@x',
  });
  expect(parseRegistryCredential('bot:pw@Registry.Internal:5000')).toEqual({
    registry: 'registry.internal:5000',
    username: 'bot',
    password: 'pw',
  });
  expect(parseRegistryCredential('bot:pw@docker.io')?.registry).toBe('docker.io');
});

test.each([
  ['no registry', 'just-a-token'],
  ['no password', 'bot:@ghcr.io'],
  ['no username', ':pw@ghcr.io'],
  ['a registry that is no host', 'bot:pw@not a host'],
  ['a bare word, which images read as a Docker Hub path', 'bot:pw@registry'],
  ['a path after the host', 'bot:pw@ghcr.io/acme'],
])('%s is refused', (_what, value) => {
  expect(parseRegistryCredential(value)).toBeUndefined();
});

test.each([
  ['Error reading manifest v1 in 127.0.0.1:5000/x: unauthorized: authentication required', 'pull_unauthorized'],
  ['reading manifest v9 in 127.0.0.1:5000/tools/nope: manifest unknown: manifest unknown', 'not_found'],
  [
    'Error choosing an image from manifest list docker://x: no image found in manifest list for architecture riscv64',
    'unsupported',
  ],
  ['pinging container registry 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused', undefined],
])('skopeo saying %j is %s', (stderr, problem) => {
  expect(classifySkopeoError(stderr)).toBe(problem);
});
