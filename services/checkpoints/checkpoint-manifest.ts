import { gunzipSync, gzipSync } from 'node:zlib';

/**
 * What a checkpoint holds of a run's files, as its manifest says it: paths under `workspace/`
 * and `home/`, each a directory, a symlink (its target, never followed) or a regular file (its
 * bytes in the object store: inside a pack of small files, or as chunks of their own). A delta
 * manifest lists only what changed since its parent and what is gone; composing a full one
 * replays deltas onto the nearest full manifest before them.
 */

/** Where a file's bytes are: at `offset` in a pack object, or the concatenation of chunk objects. */
export type ContentRef = { pack: string; offset: number } | { chunks: string[] };

interface EntryBase {
  path: string;
  /** Permission bits (07777). */
  mode: number;
  /** Modification time in nanoseconds since the epoch, as a decimal string. */
  mtime: string;
}

export type ManifestEntry =
  | (EntryBase & { type: 'dir' })
  | (EntryBase & { type: 'symlink'; target: string })
  | (EntryBase & { type: 'file'; size: number; content: ContentRef });

export interface ManifestDocument {
  version: 1;
  /** Every entry (a full manifest), or only those changed since the parent (a delta). */
  full: boolean;
  entries: ManifestEntry[];
  /** Paths gone since the parent, each of them (a directory's and everything that was in it). */
  deleted: string[];
}

export function encodeManifest(document: ManifestDocument): Buffer {
  return gzipSync(Buffer.from(JSON.stringify(document)));
}

export function decodeManifest(bytes: Buffer): ManifestDocument {
  const document = JSON.parse(gunzipSync(bytes).toString('utf8')) as ManifestDocument;
  if (document.version !== 1 || !Array.isArray(document.entries)) throw new Error('not a checkpoint manifest');
  return document;
}

/** The full list of entries a chain of manifests (oldest first, starting with a full one) comes to, in path order. */
export function composeManifests(chain: readonly ManifestDocument[]): ManifestEntry[] {
  if (!chain[0]?.full) throw new Error('a chain of manifests starts with a full one');
  const entries = new Map<string, ManifestEntry>();
  for (const document of chain) {
    if (document.full) entries.clear();
    for (const gone of document.deleted) entries.delete(gone);
    for (const entry of document.entries) entries.set(entry.path, entry);
  }
  return [...entries.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The objects a list of entries needs (packs and chunks), each once. */
export function objectsOf(entries: readonly ManifestEntry[]): Set<string> {
  const keys = new Set<string>();
  for (const entry of entries) {
    if (entry.type !== 'file') continue;
    if ('pack' in entry.content) keys.add(entry.content.pack);
    else for (const chunk of entry.content.chunks) keys.add(chunk);
  }
  return keys;
}
