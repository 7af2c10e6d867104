/**
 * The service's rate limit and hourly quota off, as a benchmark sends far more than they allow
 * (one key, thousands of requests); the same variables in the environment turn them back on, to
 * measure what they cost. TEAM_MAX_CONCURRENT_RUNS keeps the service's default unless set: every
 * run pays for its admission, and a benchmark with it off once hid what a burst of one team's runs
 * cost (each admission woke every younger run: n²/2 signals).
 */
export function benchLimits(): Record<string, string> {
  const off = ['RATE_LIMIT_REQUESTS_PER_MINUTE', 'TEAM_MAX_RUNS_PER_HOUR'];
  const limits = Object.fromEntries(off.map((name) => [name, process.env[name] ?? '0']));
  const concurrent = process.env.TEAM_MAX_CONCURRENT_RUNS;
  return concurrent === undefined ? limits : { ...limits, TEAM_MAX_CONCURRENT_RUNS: concurrent };
}
