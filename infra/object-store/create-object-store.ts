import { randomUUID } from 'node:crypto';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { ObjectStoreConfig } from '../../core/config';
import { DirectoryObjectStore } from './directory-store';
import type { ObjectStore } from './object-store';
import { S3ObjectStore } from './s3-store';

/** Credentials for the S3 client instead of the SDK's default chain (the tests give their server's). */
export interface StoreOptions {
  credentials?: S3ClientConfig['credentials'];
}

/**
 * The object store the configuration names (OBJECT_STORE and its variables). The S3 client takes
 * its credentials from the AWS SDK's default chain (environment, profile, web identity, instance
 * role) unless `credentials` are given (the tests' server).
 */
export function createObjectStore(config: ObjectStoreConfig, options: StoreOptions = {}): ObjectStore {
  if (config.kind === 'directory') return new DirectoryObjectStore(config.dir);
  const client = new S3Client({
    region: config.region,
    endpoint: config.endpoint,
    forcePathStyle: config.forcePathStyle,
    credentials: options.credentials,
    // A server that does not answer fails the request in seconds instead of hanging a step.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  });
  return new S3ObjectStore(client, { bucket: config.bucket, prefix: config.prefix, endpoint: config.endpoint });
}

/** createObjectStore, checked: a process whose store cannot be written, read and deleted refuses to start. */
export async function openObjectStore(config: ObjectStoreConfig, options: StoreOptions = {}): Promise<ObjectStore> {
  const store = createObjectStore(config, options);
  await probeObjectStore(store, config);
  return store;
}

/** An object store the process cannot use: the message says which and what to check. */
export class ObjectStoreUnusableError extends Error {}

/** Writes, reads back and deletes a small object under `probes/`; throws what to fix when any of it fails. */
export async function probeObjectStore(store: ObjectStore, config: ObjectStoreConfig): Promise<void> {
  const key = `probes/${randomUUID()}`;
  const body = Buffer.from(`agent-runs probe ${key}\n`);
  try {
    await store.put(key, body);
    const read = await store.get(key);
    if (!read?.equals(body)) throw new Error('an object just written read back different or missing');
    await store.delete([key]);
  } catch (err) {
    throw new ObjectStoreUnusableError(
      `The object store (${store.description}) cannot be used: ${explain(err, config)}`,
      {
        cause: err,
      },
    );
  }
}

/** The error, and what the operator should look at. */
function explain(err: unknown, config: ObjectStoreConfig): string {
  const { name = 'Error', message = String(err), code } = err as { name?: string; message?: string; code?: string };
  const said = `${name === 'Error' ? '' : `${name}: `}${message}`;
  if (config.kind === 'directory') return `${said} (check OBJECT_STORE_DIR and its permissions)`;
  if (name === 'NoSuchBucket') return `${said} (OBJECT_STORE_S3_BUCKET=${config.bucket} does not exist: make it first)`;
  if (name === 'CredentialsProviderError')
    return `${said} (no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or a role)`;
  if (/AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|Forbidden|ExpiredToken/.test(name))
    return `${said} (the credentials were refused, or may not write, read and delete in the bucket)`;
  if (/Region is missing/i.test(message)) return `${said} (set OBJECT_STORE_S3_REGION)`;
  if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|TimeoutError/.test(`${code ?? ''} ${name} ${message}`))
    return `${said} (cannot reach ${config.endpoint ?? 'S3'}: check OBJECT_STORE_S3_ENDPOINT)`;
  return `${said} (check the OBJECT_STORE_S3_* variables and the credentials)`;
}
