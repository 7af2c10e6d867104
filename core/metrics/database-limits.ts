import { Counter, Gauge } from 'prom-client';
import { metricsRegistry } from './registry';

/** Database and limits: requests and runs refused by a limit, PostgreSQL's reachability. */

export const rateLimitRejections = new Counter({
  name: 'agent_runs_rate_limit_rejections_total',
  help: 'Requests and runs refused by a limit: request_rate (RATE_LIMIT_REQUESTS_PER_MINUTE), runs_per_hour (TEAM_MAX_RUNS_PER_HOUR), client_address (RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE).',
  labelNames: ['limit'] as const,
  registers: [metricsRegistry],
});

export const databaseReachable = new Gauge({
  name: 'agent_runs_database_reachable',
  help: 'Whether PostgreSQL answers this process (1) or failed a probe after a query or connection failed (0): new database work is then refused at once.',
  registers: [metricsRegistry],
});
databaseReachable.set(1);

export const databaseRefusals = new Counter({
  name: 'agent_runs_database_refusals_total',
  help: 'Database work (a connection from the pool) refused at once, or let go while waiting, because PostgreSQL was unreachable.',
  registers: [metricsRegistry],
});
