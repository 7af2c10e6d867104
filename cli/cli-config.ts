import { UsageError } from './exit-codes';

/** Where `AGENT_RUNS_URL` points when unset: the API of `npm start` on this machine. */
export const DEFAULT_URL = 'http://localhost:8080';

/** The CLI's configuration: the one place it reads the environment. */
export interface CliConfig {
  /** The API's base URL, ending in `/api/v1`. */
  apiBaseUrl: string;
  apiKey: string;
  /** Colour in human output: stdout is a terminal (or `FORCE_COLOR`), and `NO_COLOR` is unset. */
  color: boolean;
  /** A spinner while the agent works: only on an interactive terminal, never in CI. */
  spinner: boolean;
}

/** Flags that override the environment. */
export interface ConnectionOptions {
  url?: string;
  apiKey?: string;
}

/**
 * The API base URL from `AGENT_RUNS_URL` (or `--url`): the service's origin, to which `/api/v1`
 * is added; a URL that already ends in `/api/v1` is taken as it is.
 */
export function apiBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`AGENT_RUNS_URL (or --url) must be an http(s) URL such as ${DEFAULT_URL} (got "${raw}").`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`AGENT_RUNS_URL (or --url) must be an http(s) URL such as ${DEFAULT_URL} (got "${raw}").`);
  }
  if (url.search || url.hash) {
    throw new UsageError(`AGENT_RUNS_URL (or --url) takes no query or fragment (got "${raw}").`);
  }
  const base = url.href.replace(/\/+$/, '');
  return base.endsWith('/api/v1') ? base : `${base}/api/v1`;
}

function forceColor(env: NodeJS.ProcessEnv): boolean | undefined {
  const value = env.FORCE_COLOR;
  if (value === undefined || value === '') return undefined;
  return value !== '0' && value !== 'false';
}

/** Reads the configuration; a missing key or a bad URL is a `UsageError` that says what to set. */
export function loadCliConfig(
  options: ConnectionOptions,
  env: NodeJS.ProcessEnv = process.env,
  streams: { stdout: { isTTY?: boolean }; stderr: { isTTY?: boolean; columns?: number } } = process,
): CliConfig {
  const apiKey = (options.apiKey ?? env.AGENT_RUNS_API_KEY ?? '').trim();
  if (!apiKey) {
    throw new UsageError(
      'No API key: set AGENT_RUNS_API_KEY (or pass --api-key). Create one with `npm run keys -- create --kind agent --name ci-bot --team <team>` on the service.',
    );
  }
  const url = options.url ?? (env.AGENT_RUNS_URL?.trim() || DEFAULT_URL);
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  const color = forceColor(env) ?? (!noColor && streams.stdout.isTTY === true && env.TERM !== 'dumb');
  return {
    apiBaseUrl: apiBaseUrl(url),
    apiKey,
    color,
    // A terminal that reports no width (a bare pty) cannot have its spinner line redrawn.
    spinner:
      streams.stdout.isTTY === true &&
      streams.stderr.isTTY === true &&
      (streams.stderr.columns ?? 0) > 0 &&
      !env.CI &&
      env.TERM !== 'dumb',
  };
}
