/**
 * Which forge serves a repository, chosen by its host (GIT_FORGES), and where its API is. Pure:
 * the adapters in services/pull-requests/forges speak each kind's API.
 */

/** The forge APIs the service speaks; Forgejo speaks `gitea`. */
export const FORGE_KINDS = ['github', 'gitlab', 'gitea'] as const;
export type ForgeKind = (typeof FORGE_KINDS)[number];

/** Hosts every deployment knows; GIT_FORGES adds to or overrides them. */
export const BUILT_IN_FORGES: Readonly<Record<string, ForgeKind>> = { 'github.com': 'github', 'gitlab.com': 'gitlab' };

/** A repository on a forge: its web origin (`https://host[:port]`) and its path there. */
export interface ForgeRepository {
  /** `https://host[:port]`, as repositories are cloned from. */
  origin: string;
  /** `host[:port]` in lower case: what GIT_FORGES names. */
  host: string;
  /** The owner (user or organization; a GitLab group path may hold slashes). */
  owner: string;
  name: string;
}

/**
 * `https://host[:port]/<owner>/<name>[.git]` as a repository. Undefined for anything else
 * (another scheme, credentials in the URL, a query, fewer than two path segments).
 */
export function parseRepositoryUrl(url: string): ForgeRepository | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (!['http:', 'https:'].includes(parsed.protocol) || parsed.username || parsed.password) return undefined;
  if (parsed.search || parsed.hash) return undefined;
  const segments = parsed.pathname
    .replace(/\.git\/?$/, '')
    .split('/')
    .filter(Boolean);
  if (segments.length < 2 || segments.some((s) => s === '.' || s === '..')) return undefined;
  const name = segments.pop()!;
  return { origin: parsed.origin, host: parsed.host.toLowerCase(), owner: segments.join('/'), name };
}

/** The kind of the forge at `host` (`host[:port]`), from GIT_FORGES over the built-ins; undefined: none configured. */
export function forgeKindOf(forges: Readonly<Record<string, ForgeKind>>, host: string): ForgeKind | undefined {
  return Object.hasOwn(forges, host.toLowerCase()) ? forges[host.toLowerCase()] : undefined;
}

/**
 * The base URL of a forge's REST API: GitHub's is api.github.com for github.com and `/api/v3` on
 * a GitHub Enterprise Server; GitLab's `/api/v4`; Gitea's (and Forgejo's) `/api/v1`.
 */
export function forgeApiBase(kind: ForgeKind, repository: Pick<ForgeRepository, 'origin' | 'host'>): string {
  switch (kind) {
    case 'github':
      return repository.host === 'github.com' ? 'https://api.github.com' : `${repository.origin}/api/v3`;
    case 'gitlab':
      return `${repository.origin}/api/v4`;
    case 'gitea':
      return `${repository.origin}/api/v1`;
  }
}
