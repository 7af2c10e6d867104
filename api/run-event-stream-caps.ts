import type { StreamCaps } from '../core/config';
import { eventStreamsOpen } from '../core/metrics';

/** The caps on open event streams: the count of those open, and how a refusal names the cap. */

/** How long a client refused at a cap is asked to wait. */
export const CAPPED_RETRY_SECONDS = 5;

/** Counts open streams in all, per client address and per run; says which cap a new one would pass. */
export function streamCounter(caps: StreamCaps | undefined) {
  const byClient = new Map<string, number>();
  const byRun = new Map<string, number>();
  let total = 0;
  const bump = (map: Map<string, number>, key: string, by: number) => {
    const next = (map.get(key) ?? 0) + by;
    if (next > 0) map.set(key, next);
    else map.delete(key);
  };
  return {
    /** The cap that refuses a new stream, or undefined after counting it in. */
    open(client: string, runId: string): keyof StreamCaps | undefined {
      if (caps) {
        if ((byClient.get(client) ?? 0) >= caps.perClient) return 'perClient';
        if ((byRun.get(runId) ?? 0) >= caps.perRun) return 'perRun';
        if (total >= caps.total) return 'total';
      }
      bump(byClient, client, 1);
      bump(byRun, runId, 1);
      total++;
      eventStreamsOpen.inc();
      return undefined;
    },
    close(client: string, runId: string): void {
      bump(byClient, client, -1);
      bump(byRun, runId, -1);
      total--;
      eventStreamsOpen.dec();
    },
  };
}

export const CAP_NAMES = {
  perClient: { metric: 'client', variable: 'SSE_MAX_STREAMS_PER_CLIENT', what: 'from your address' },
  perRun: { metric: 'run', variable: 'SSE_MAX_STREAMS_PER_RUN', what: 'of this run' },
  total: { metric: 'total', variable: 'SSE_MAX_STREAMS', what: 'in all' },
} as const;
