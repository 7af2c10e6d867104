import { collectDefaultMetrics, Registry } from 'prom-client';

/** The one registry every metric of the service is on (core/metrics.ts), and the buckets they share. */

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

/** Seconds, from a few milliseconds (a request) to an hour (a queued run, a long step). */
export const SHORT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
export const LONG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
