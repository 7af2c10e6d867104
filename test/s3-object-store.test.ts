import { execFile } from 'node:child_process';
import path from 'node:path';
import type { ObjectStoreConfig } from '../core/config';
import {
  createObjectStore,
  ObjectStoreUnusableError,
  openObjectStore,
} from '../infra/object-store/create-object-store';
import { objectStoreConformance } from './helpers/object-store-conformance';
import { freePort } from './helpers/free-port';
import { testStack, uniqueName } from './helpers/test-context';

/** The test run's S3 server (Versity Gateway, test/stack/test-stack.ts) as the configuration names it. */
function s3Config(overrides: Partial<Extract<ObjectStoreConfig, { kind: 's3' }>> = {}): ObjectStoreConfig {
  const { s3 } = testStack();
  return {
    kind: 's3',
    bucket: s3.bucket,
    prefix: undefined,
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    ...overrides,
  };
}

function credentials() {
  const { accessKeyId, secretAccessKey } = testStack().s3;
  return { accessKeyId, secretAccessKey };
}

objectStoreConformance('S3 (Versity Gateway)', async () =>
  createObjectStore(s3Config({ prefix: uniqueName('conformance') }), { credentials: credentials() }),
);

describe('the S3 backend', () => {
  test('keeps every object under OBJECT_STORE_S3_PREFIX, which no key can leave', async () => {
    const prefix = `deployments/${uniqueName('prefix')}`;
    const store = createObjectStore(s3Config({ prefix }), { credentials: credentials() });
    const whole = createObjectStore(s3Config(), { credentials: credentials() });
    await store.put('sha256/ab/one', Buffer.from('one'));
    expect(store.description).toBe(`s3://${testStack().s3.bucket}/${prefix}/ at ${testStack().s3.endpoint}`);
    expect(await whole.get(`${prefix}/sha256/ab/one`)).toEqual(Buffer.from('one'));
    const listed: string[] = [];
    for await (const object of store.list('')) listed.push(object.key);
    expect(listed).toEqual(['sha256/ab/one']);
    await expect(store.put('../escaped', Buffer.from('x'))).rejects.toThrow('not an object key');
    await store.delete(['sha256/ab/one']);
    expect(await whole.has(`${prefix}/sha256/ab/one`)).toBe(false);
  });

  test("takes its credentials from the AWS SDK's default chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)", async () => {
    const saved = { ...process.env };
    // Never the instance metadata service: this machine is no cloud instance, and nothing leaves loopback.
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    try {
      await expect(openObjectStore(s3Config())).rejects.toThrow(ObjectStoreUnusableError);
      process.env.AWS_ACCESS_KEY_ID = credentials().accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = credentials().secretAccessKey;
      const store = await openObjectStore(s3Config());
      await store.put('chain/probe', Buffer.from('from the environment'));
      expect((await store.get('chain/probe'))?.toString()).toBe('from the environment');
      await store.delete(['chain/probe']);
    } finally {
      process.env = saved;
    }
  });

  test('a store that cannot be used stops the start, saying what to check and never the secret', async () => {
    const { secretAccessKey } = credentials();
    const refusal = async (config: ObjectStoreConfig, creds = credentials()) => {
      const err = (await openObjectStore(config, { credentials: creds }).then(
        () => undefined,
        (e: unknown) => e,
      )) as Error;
      expect(err).toBeInstanceOf(ObjectStoreUnusableError);
      expect(err.message).not.toContain(secretAccessKey);
      return err.message;
    };
    expect(await refusal(s3Config({ bucket: 'no-such-bucket' }))).toMatch(
      /^The object store \(s3:\/\/no-such-bucket\/ at http:\/\/127\.0\.0\.1:\d+\) cannot be used: .*OBJECT_STORE_S3_BUCKET=no-such-bucket does not exist/,
    );
    expect(await refusal(s3Config(), { ...credentials(), secretAccessKey: 'wrong-secret' })).toMatch(
      /cannot be used: .*the credentials were refused/,
    );
    const nothingThere = `http://127.0.0.1:${await freePort()}`;
    expect(await refusal(s3Config({ endpoint: nothingThere }))).toMatch(
      new RegExp(`cannot be used: .*cannot reach ${nothingThere}: check OBJECT_STORE_S3_ENDPOINT`),
    );
  });
});

test('the API refuses to start on a bucket that does not exist, naming the variable', async () => {
  const { s3 } = testStack();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: 'postgres://127.0.0.1:1/never-reached',
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    OBJECT_STORE_S3_BUCKET: 'no-such-bucket',
    OBJECT_STORE_S3_ENDPOINT: s3.endpoint,
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'api/main.ts'],
      { cwd: path.resolve(__dirname, '..'), env, timeout: 60_000 },
      (err, _stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr }),
    );
  });
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(
    /^API failed to start: The object store \(s3:\/\/no-such-bucket\/ at .*\) cannot be used: .*OBJECT_STORE_S3_BUCKET=no-such-bucket does not exist: make it first/,
  );
  expect(result.stderr).not.toContain(s3.secretAccessKey);
});
