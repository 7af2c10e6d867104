import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../core/config';
import { temporalConnectionFrom } from '../../core/config/temporal-profile';
import { makeTestCertificates, type TestCertificates } from '../helpers/test-certificates';

let certs: TestCertificates;
beforeAll(() => {
  certs = makeTestCertificates();
});
afterAll(() => rmSync(certs.dir, { recursive: true, force: true }));

/** No config file unless a test gives one (a developer's own ~/.config/temporalio must not count). */
const none = () => ({ TEMPORAL_CONFIG_FILE: path.join(certs.dir, 'absent.toml') });

function problem(env: Record<string, string>): string {
  try {
    temporalConnectionFrom({ ...none(), ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('no ConfigError');
}

test('nothing set: plaintext to the dev server npm start runs (no address)', () => {
  expect(temporalConnectionFrom(none())).toMatchObject({ address: undefined, tls: undefined, security: 'plaintext' });
});

test('mTLS from the variables: the files are read once and handed on as bytes', () => {
  const settings = temporalConnectionFrom({
    ...none(),
    TEMPORAL_ADDRESS: 'temporal.example:7233',
    TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caCert,
    TEMPORAL_TLS_SERVER_NAME: certs.serverName,
  });
  expect(settings.security).toBe('mTLS');
  expect(settings.tls).toEqual({
    serverNameOverride: certs.serverName,
    serverRootCACertificate: new Uint8Array(readFileSync(certs.caCert)),
    clientCertPair: {
      crt: new Uint8Array(readFileSync(certs.clientCert)),
      key: new Uint8Array(readFileSync(certs.clientKey)),
    },
  });
  expect(settings.sources).toContain(`TEMPORAL_TLS_CLIENT_CERT_PATH=${certs.clientCert}`);
});

test('the _DATA variants carry the PEM itself; an API key alone turns TLS on', () => {
  const settings = temporalConnectionFrom({
    ...none(),
    TEMPORAL_ADDRESS: 'x.tmprl.cloud:7233',
    TEMPORAL_TLS_CLIENT_CERT_DATA: readFileSync(certs.clientCert, 'utf8'),
    TEMPORAL_TLS_CLIENT_KEY_DATA: readFileSync(certs.clientKey, 'utf8'),
  });
  expect(settings.security).toBe('mTLS');
  expect(settings.sources).toEqual(['TEMPORAL_TLS_CLIENT_CERT_DATA', 'TEMPORAL_TLS_CLIENT_KEY_DATA']);
  const keyOnly = temporalConnectionFrom({ ...none(), TEMPORAL_ADDRESS: 'x:7233', TEMPORAL_API_KEY: 'k-123456' });
  expect(keyOnly).toMatchObject({ tls: true, apiKey: 'k-123456', security: 'TLS + API key' });
  expect(
    temporalConnectionFrom({
      ...none(),
      TEMPORAL_ADDRESS: 'x:7233',
      TEMPORAL_TLS: 'false',
      TEMPORAL_API_KEY: 'k-123456',
    }).security,
  ).toBe('plaintext + API key');
});

test('a profile of the TOML file, chosen by TEMPORAL_PROFILE; variables override its keys', () => {
  const file = path.join(certs.dir, 'profiles.toml');
  writeFileSync(
    file,
    [
      '[profile.default]',
      'address = "default:7233"',
      '[profile.prod]',
      'address = "prod:7233"',
      'namespace = "prod-ns"',
      'api_key = "file-key-123"',
      '[profile.prod.grpc_meta]',
      'x-team = "platform"',
    ].join('\n'),
  );
  expect(temporalConnectionFrom({ TEMPORAL_CONFIG_FILE: file }).address).toBe('default:7233');
  const prod = temporalConnectionFrom({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
  expect(prod).toMatchObject({
    address: 'prod:7233',
    namespace: 'prod-ns',
    apiKey: 'file-key-123',
    metadata: { 'x-team': 'platform' },
  });
  expect(prod.sources).toEqual(['TEMPORAL_PROFILE=prod']);
  const overridden = temporalConnectionFrom({
    TEMPORAL_CONFIG_FILE: file,
    TEMPORAL_PROFILE: 'prod',
    TEMPORAL_NAMESPACE: 'other',
  });
  expect(overridden.namespace).toBe('other');
  expect(problem({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' })).toMatch(
    /Temporal profile \(TEMPORAL_CONFIG_FILE=.*profiles\.toml, TEMPORAL_PROFILE\): Profile 'staging' not found/,
  );
});

test('each certificate problem is a ConfigError naming TLS, the variable and what is wrong', () => {
  const address = { TEMPORAL_ADDRESS: 'temporal.example:7233' };
  const missing = path.join(certs.dir, 'missing.pem');
  expect(problem({ ...address, TEMPORAL_TLS_SERVER_CA_CERT_PATH: missing })).toBe(
    `Invalid configuration:\n  Temporal TLS: TEMPORAL_TLS_SERVER_CA_CERT_PATH=${missing}: cannot be read (ENOENT)`,
  );
  expect(problem({ ...address, TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.clientKey })).toContain(
    `TEMPORAL_TLS_SERVER_CA_CERT_PATH=${certs.clientKey}: is not a PEM certificate`,
  );
  expect(problem({ ...address, TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert })).toContain(
    'is set without TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA): mTLS needs the certificate and its key',
  );
  expect(
    problem({
      ...address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.strangerKey,
    }),
  ).toContain(`TEMPORAL_TLS_CLIENT_KEY_PATH=${certs.strangerKey}: is not the key of the client certificate`);
  expect(
    problem({
      ...address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientCert,
    }),
  ).toContain('is not a PEM private key');
  expect(
    problem({
      ...address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.expiredCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.expiredKey,
    }),
  ).toMatch(new RegExp(`TEMPORAL_TLS_CLIENT_CERT_PATH=${certs.expiredCert}: expired on \\d{4}-`));
  const keyText = readFileSync(certs.strangerKey, 'utf8');
  const fromData = problem({
    ...address,
    TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_DATA: keyText,
  });
  expect(fromData).toContain('TEMPORAL_TLS_CLIENT_KEY_DATA: is not the key of the client certificate');
  expect(fromData).not.toContain('PRIVATE KEY');
});

test('TLS or an API key without an address: refused (the embedded dev server takes neither)', () => {
  expect(problem({ TEMPORAL_API_KEY: 'k-123456' })).toContain('TEMPORAL_ADDRESS: required with TLS or an API key');
});
