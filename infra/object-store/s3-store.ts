import { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  paginateListObjectsV2,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { assertValidKey, type ObjectStore, type StoredObject } from './object-store';

/** Objects above this go up in parts of this size, four at a time (S3 takes one PUT up to 5 GiB; parts are faster and retried alone). */
const PART_BYTES = 8 * 1024 * 1024;
/** The most keys one DeleteObjects request takes. */
const DELETE_BATCH = 1000;

/** Where in an S3-compatible store: the bucket, the prefix of every key (segments, no slash at either end), and the server when not AWS. */
export interface S3Location {
  bucket: string;
  prefix?: string;
  endpoint?: string;
}

/**
 * Objects in a bucket of any S3-compatible store (AWS S3, or a server such as Versity Gateway,
 * MinIO, Ceph RGW or SeaweedFS), for several machines. A PUT is atomic in S3: a reader sees the
 * whole object or none. Credentials are the client's (the SDK's default chain) and never shown.
 */
export class S3ObjectStore implements ObjectStore {
  constructor(
    private readonly client: S3Client,
    private readonly location: S3Location,
  ) {}

  get description(): string {
    const { bucket, prefix, endpoint } = this.location;
    return `s3://${bucket}/${prefix ? `${prefix}/` : ''}${endpoint ? ` at ${endpoint}` : ''}`;
  }

  async put(key: string, body: Buffer): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.location.bucket, Key: this.s3Key(key), Body: body },
      partSize: PART_BYTES,
      queueSize: 4,
    });
    await upload.done();
  }

  async get(key: string): Promise<Buffer | undefined> {
    const stream = await this.getStream(key);
    if (!stream) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async getStream(key: string): Promise<Readable | undefined> {
    const command = new GetObjectCommand({ Bucket: this.location.bucket, Key: this.s3Key(key) });
    const response = await this.client.send(command).catch(absent);
    if (!response) return undefined;
    // In Node the body is the response's IncomingMessage: a Readable.
    if (!(response.Body instanceof Readable)) throw new Error(`GetObject of ${key} returned no Node stream`);
    return response.Body;
  }

  async has(key: string): Promise<boolean> {
    const command = new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.s3Key(key) });
    return (await this.client.send(command).catch(absent)) !== undefined;
  }

  async delete(keys: readonly string[]): Promise<void> {
    const s3Keys = keys.map((key) => this.s3Key(key));
    for (let start = 0; start < s3Keys.length; start += DELETE_BATCH) {
      const batch = s3Keys.slice(start, start + DELETE_BATCH);
      const response = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.location.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failed = response.Errors ?? [];
      if (failed.length) {
        const [first] = failed;
        throw new Error(
          `could not delete ${failed.length} object(s), e.g. ${first?.Key}: ${first?.Code} ${first?.Message}`,
        );
      }
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const base = this.location.prefix ? `${this.location.prefix}/` : '';
    const pages = paginateListObjectsV2(
      { client: this.client, pageSize: 1000 },
      { Bucket: this.location.bucket, Prefix: `${base}${prefix}` },
    );
    // S3 lists in the UTF-8 byte order of keys, which is key order for the ASCII keys of assertValidKey.
    for await (const page of pages) {
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        yield {
          key: object.Key.slice(base.length),
          size: object.Size ?? 0,
          modifiedAt: object.LastModified ?? new Date(0),
        };
      }
    }
  }

  private s3Key(key: string): string {
    assertValidKey(key);
    return this.location.prefix ? `${this.location.prefix}/${key}` : key;
  }
}

/** Undefined for an object that is not there (GetObject's NoSuchKey, HeadObject's bare 404); other errors go on. */
function absent(err: unknown): undefined {
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const name = (err as { name?: string }).name;
  if (name === 'NoSuchKey' || name === 'NotFound' || (status === 404 && name !== 'NoSuchBucket')) return undefined;
  throw err;
}
