import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';

/**
 * Where the bytes of runs' files are kept (checkpoints of workspaces, artifacts, attachments,
 * handoff patches, harnesses' raw event logs): a flat namespace of keys, each naming an object
 * that never changes once written. PostgreSQL keeps what describes them. Two backends: a
 * directory under the data directory (the embedded default, one machine) and any S3-compatible
 * object store (several machines).
 */
export interface ObjectStore {
  /** Where the objects are, for logs and the start-up lines (no credentials). */
  readonly description: string;
  /** Writes `body` under `key`; a reader never sees a partial object. Writing a key again with the same bytes is harmless. */
  put(key: string, body: Buffer): Promise<void>;
  /** The object's bytes, or undefined when there is none. */
  get(key: string): Promise<Buffer | undefined>;
  /** The object's bytes as a stream, or undefined when there is none. */
  getStream(key: string): Promise<Readable | undefined>;
  has(key: string): Promise<boolean>;
  /** Deletes the objects; keys with no object are no error. */
  delete(keys: readonly string[]): Promise<void>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): AsyncIterable<StoredObject>;
}

export interface StoredObject {
  key: string;
  size: number;
  modifiedAt: Date;
}

/** The content-addressed key of some bytes: `sha256/<first two hex>/<sha-256 hex>`. */
export function contentKey(bytes: Buffer): string {
  return contentKeyOfDigest(createHash('sha256').update(bytes).digest('hex'));
}

export function contentKeyOfDigest(sha256Hex: string): string {
  return `sha256/${sha256Hex.slice(0, 2)}/${sha256Hex}`;
}

/** Keys are relative paths of plain segments: what a directory and S3 both take as they are. */
export function assertValidKey(key: string): void {
  if (!/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(key) || key.split('/').some((s) => s === '.' || s === '..'))
    throw new Error(`not an object key: ${JSON.stringify(key)}`);
}
