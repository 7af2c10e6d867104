/**
 * The service's rate limits and team quotas off, as a benchmark measures the service and not its
 * limits (one key sends far more than RATE_LIMIT_REQUESTS_PER_MINUTE); the same variables in the
 * environment turn them back on, to measure what they cost.
 */
export function benchLimits(): Record<string, string> {
  const names = ['RATE_LIMIT_REQUESTS_PER_MINUTE', 'TEAM_MAX_RUNS_PER_HOUR', 'TEAM_MAX_CONCURRENT_RUNS'];
  return Object.fromEntries(names.map((name) => [name, process.env[name] ?? '0']));
}
