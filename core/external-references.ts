/** Longest URL a run may report as an external reference. */
export const MAX_REFERENCE_URL_BYTES = 2048;
/** `reference_type`: a short lowercase identifier such as `pull_request` or `linear_issue`. */
export const REFERENCE_TYPE = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * The canonical form of an external reference's URL, under which it is stored and looked up:
 * http or https, scheme and host in lowercase, no default port, no fragment, no trailing slash
 * on a path (the root keeps its one); the query is kept as given. Throws with a message for the
 * model or the caller when the URL is not one.
 */
export function canonicalReferenceUrl(raw: string): string {
  if (Buffer.byteLength(raw) > MAX_REFERENCE_URL_BYTES) {
    throw new Error(`the URL is longer than ${MAX_REFERENCE_URL_BYTES} bytes`);
  }
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('the URL must be http or https');
  if (url.username || url.password) throw new Error('the URL must not carry credentials');
  url.hash = '';
  if (url.pathname.length > 1) url.pathname = url.pathname.replace(/\/+$/, '');
  return url.toString();
}
