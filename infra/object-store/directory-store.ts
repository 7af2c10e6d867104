import { randomBytes } from 'node:crypto';
import { createReadStream, type Dirent } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { assertValidKey, type ObjectStore, type StoredObject } from './object-store';

/**
 * Objects as files under one directory (the embedded default: `<data dir>/objects`), each
 * written to a temporary name and renamed into place, so a reader or a crash never leaves a
 * partial object under its key. For one machine, or several that share the directory.
 */
export class DirectoryObjectStore implements ObjectStore {
  constructor(private readonly root: string) {}

  get description(): string {
    return `directory ${this.root}`;
  }

  async put(key: string, body: Buffer): Promise<void> {
    const file = this.fileOf(key);
    await mkdir(path.dirname(file), { recursive: true });
    const partial = `${file}.${randomBytes(6).toString('hex')}.partial`;
    await writeFile(partial, body, { mode: 0o600 });
    await rename(partial, file);
  }

  async get(key: string): Promise<Buffer | undefined> {
    return readFile(this.fileOf(key)).catch(absent);
  }

  async getStream(key: string): Promise<Readable | undefined> {
    const file = this.fileOf(key);
    if (!(await this.has(key))) return undefined;
    return createReadStream(file);
  }

  async has(key: string): Promise<boolean> {
    return (await stat(this.fileOf(key)).catch(absent)) !== undefined;
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) await rm(this.fileOf(key), { force: true });
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    yield* this.walk('', prefix);
  }

  private async *walk(dir: string, prefix: string): AsyncIterable<StoredObject> {
    const entries = await readdir(path.join(this.root, dir), { withFileTypes: true }).catch(absent);
    // Key order: a directory's keys all go on with `/`, so `a/x` sorts as `a/`, after `a-b`.
    const sortName = (e: Dirent) => (e.isDirectory() ? `${e.name}/` : e.name);
    for (const entry of (entries ?? []).sort((a, b) => (sortName(a) < sortName(b) ? -1 : 1))) {
      const key = dir ? `${dir}/${entry.name}` : entry.name;
      if (!(key.startsWith(prefix) || prefix.startsWith(`${key}/`))) continue;
      if (entry.isDirectory()) {
        yield* this.walk(key, prefix);
      } else if (entry.isFile() && !entry.name.endsWith('.partial')) {
        const info = await stat(path.join(this.root, key)).catch(absent);
        if (info) yield { key, size: info.size, modifiedAt: info.mtime };
      }
    }
  }

  private fileOf(key: string): string {
    assertValidKey(key);
    return path.join(this.root, key);
  }
}

function absent(err: NodeJS.ErrnoException): undefined {
  if (err.code === 'ENOENT') return undefined;
  throw err;
}
