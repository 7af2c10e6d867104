/**
 * Container image references as the distribution project's grammar has them
 * (`[registry[:port]/]path[:tag][@digest]`), normalized the way `docker pull` reads them: no
 * registry is Docker Hub (`docker.io`), and a one-part path there is an official image
 * (`library/<name>`).
 */

export interface ImageReference {
  /** `host` or `host:port`, lower case. */
  registry: string;
  /** `library/python`, `acme/tools/builder`. */
  repository: string;
  tag?: string;
  /** `sha256:<64 hex>`. */
  digest?: string;
}

export const DEFAULT_REGISTRY = 'docker.io';

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
const MAX_REFERENCE_CHARS = 500;

export const IMAGE_REFERENCE_RULE =
  '`[registry[:port]/]repository[:tag][@sha256:<digest>]`, e.g. `python:3.12-slim`, `ghcr.io/acme/builder:1.4` or `registry.internal:5000/tools@sha256:…`';

const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?';
const REGISTRY = `(?:localhost|${LABEL}(?:\\.${LABEL})+|${LABEL}(?:\\.${LABEL})*:[0-9]{1,5})`;
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
/** A first component that cannot be read as a registry (no `.`). */
const FIRST_COMPONENT = '[a-z0-9]+(?:(?:_|__|-+)[a-z0-9]+)*';
/**
 * The references parseImageReference takes, as one regular expression for the OpenAPI document
 * (it leaves out bracketed IPv6 registries, which the parser also takes).
 */
export const IMAGE_REFERENCE_PATTERN =
  `^(?:${REGISTRY}/${COMPONENT}(?:/${COMPONENT})*|${FIRST_COMPONENT}(?:/${COMPONENT})+|${COMPONENT})` +
  '(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$';

export type ParsedImageReference = { ok: true; image: ImageReference } | { ok: false; problem: string };

/** Parses an image reference; `problem` says what is wrong with it. */
export function parseImageReference(text: string): ParsedImageReference {
  const fail = (problem: string): ParsedImageReference => ({ ok: false, problem });
  if (text.length === 0 || text.length > MAX_REFERENCE_CHARS) {
    return fail(`must be 1 to ${MAX_REFERENCE_CHARS} characters`);
  }
  if (text !== text.trim()) return fail('must not start or end with spaces');
  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest))
      return fail(`has digest "${digest}"; a digest is \`sha256:\` and 64 lower-case hex digits`);
  }
  const parts = rest.split('/');
  let registry = DEFAULT_REGISTRY;
  const first = parts[0]!;
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    if (!HOST.test(first)) return fail(`has registry "${first}", which is not a host name with an optional port`);
    registry = first.toLowerCase();
    parts.shift();
  }
  const last = parts.pop() ?? '';
  const colon = last.lastIndexOf(':');
  const name = colon >= 0 ? last.slice(0, colon) : last;
  const tag = colon >= 0 ? last.slice(colon + 1) : undefined;
  if (tag !== undefined && !TAG.test(tag)) {
    return fail(
      `has tag "${tag}"; a tag is up to 128 letters, digits, \`_\`, \`.\` and \`-\`, not starting with \`.\` or \`-\``,
    );
  }
  const components = [...parts, name];
  const bad = components.find((component) => !PATH_COMPONENT.test(component));
  if (bad !== undefined) {
    return fail(
      `has repository part "${bad}"; repository parts are lower-case letters and digits, separated by \`.\`, \`_\`, \`__\` or \`-\``,
    );
  }
  if (registry === DEFAULT_REGISTRY && components.length === 1) components.unshift('library');
  return {
    ok: true,
    image: { registry, repository: components.join('/'), ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) },
  };
}

/**
 * Whether `registry` is one of `allowed` (hosts with an optional port, compared in lower case;
 * `docker.io` also matches Docker Hub's other names); everything is allowed when `allowed` is
 * empty.
 */
export function isRegistryAllowed(registry: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true;
  const hub = new Set([DEFAULT_REGISTRY, 'index.docker.io', 'registry-1.docker.io']);
  return allowed.some((entry) => {
    const host = entry.toLowerCase();
    return host === registry || (hub.has(host) && hub.has(registry));
  });
}
