/** Limits of `attachments` on run creation (documented in docs/guide/results.md). */
export const MAX_ATTACHMENTS = 5;
export const MAX_ATTACHMENT_BYTES = 4 * 1024 * 1024;
export const MAX_ATTACHMENTS_TOTAL_BYTES = 10 * 1024 * 1024;

/** Where a run's attachments are written, relative to the workspace root. */
export const ATTACHMENTS_DIR = 'attachments';

const MAX_NAME_BYTES = 200;

/**
 * A file name that stays one plain name inside ATTACHMENTS_DIR: the last path component only
 * (`../../etc/passwd` is `passwd`), control and shell-awkward characters replaced with `_`,
 * no leading dots (no `.`, `..` or hidden files), at most 200 bytes; never empty.
 */
export function sanitiseFileName(requested: string): string {
  const last = requested.split(/[/\\]/).filter(Boolean).pop() ?? '';
  let name = last
    .normalize('NFC')
    .replace(/[^\p{L}\p{N} ._+=,@()-]/gu, '_')
    .replace(/^[.\s]+/, '')
    .trim();
  // One character at a time: a character outside the BMP is two UTF-16 units, and half of one is no character.
  while (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES)
    name = name.slice(0, /[\ud800-\udbff][\udc00-\udfff]$/.test(name) ? -2 : -1);
  return name || 'attachment';
}

/** Sanitised names made unique in request order: a second `a.txt` becomes `a-2.txt`. */
export function uniqueFileNames(requested: string[]): string[] {
  const taken = new Set<string>();
  return requested.map((raw) => {
    const name = sanitiseFileName(raw);
    const dot = name.lastIndexOf('.');
    const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
    let candidate = name;
    for (let n = 2; taken.has(candidate); n++) candidate = `${stem}-${n}${ext}`;
    taken.add(candidate);
    return candidate;
  });
}
