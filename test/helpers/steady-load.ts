import type { Response } from 'superagent';
import type { TestContext } from './test-context';
import { auth } from './runs';
import { waitFor } from './test-context';

export type RequestKind = 'create' | 'followup' | 'read';

export interface LoadResult {
  kind: RequestKind;
  status: number;
  sentAt: number;
  answeredAt: number;
  retryAfter?: string;
  errorCode?: string;
  detail?: string;
  runId?: string;
}

/**
 * A steady load of creates, follow-ups (to `followupRunId`) and reads (a run and the list), one
 * of each kind in flight at a time with `gapMs` between them, until `stop()`. Every response is
 * recorded with when it was sent and answered; a request that gets no answer within
 * `answerWithinMs` is recorded with status 0.
 */
export function startSteadyLoad(
  ctx: TestContext,
  key: string,
  options: { followupRunId: string; prompt: string; gapMs?: number; answerWithinMs?: number },
): { stop(): Promise<LoadResult[]> } {
  const results: LoadResult[] = [];
  let stopped = false;
  const gap = options.gapMs ?? 250;
  const within = options.answerWithinMs ?? 10_000;
  const send = async (kind: RequestKind, request: () => Promise<Response>) => {
    const sentAt = Date.now();
    try {
      const res = await request();
      results.push({
        kind,
        status: res.status,
        sentAt,
        answeredAt: Date.now(),
        retryAfter: res.headers['retry-after'] as string | undefined,
        errorCode: (res.body as { error_code?: string } | undefined)?.error_code,
        detail: (res.body as { detail?: string } | undefined)?.detail,
        runId: kind === 'create' && res.status === 201 ? (res.body as { run_id: string }).run_id : undefined,
      });
    } catch {
      results.push({ kind, status: 0, sentAt, answeredAt: Date.now() });
    }
  };
  const loop = async (kind: RequestKind, request: (n: number) => Promise<Response>) => {
    for (let n = 0; !stopped; n += 1) {
      await send(kind, () => request(n));
      await new Promise((resolve) => setTimeout(resolve, gap));
    }
  };
  const loops = [
    loop('create', (n) =>
      ctx.api
        .post('/api/v1/agent/runs')
        .set(auth(key))
        .timeout(within)
        .send({ prompt: `${options.prompt} #${n}`, config: { idle_timeout_minutes: 0 } }),
    ),
    loop('followup', (n) =>
      ctx.api
        .post(`/api/v1/agent/runs/${options.followupRunId}/followups`)
        .set(auth(key))
        .timeout(within)
        .send({ message: `follow-up #${n}` }),
    ),
    loop('read', (n) =>
      n % 2 === 0
        ? ctx.api.get(`/api/v1/agent/runs/${options.followupRunId}`).set(auth(key)).timeout(within)
        : ctx.api.get('/api/v1/agent/runs?limit=5').set(auth(key)).timeout(within),
    ),
  ];
  return {
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return results;
    },
  };
}

/** Counts by kind and status, for the test's report. */
export function countByKindAndStatus(results: LoadResult[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) counts[`${r.kind} ${r.status}`] = (counts[`${r.kind} ${r.status}`] ?? 0) + 1;
  return counts;
}

/** Responses to requests sent and answered while the dependency was down. */
export function answeredDuring(results: LoadResult[], from: number, to: number): LoadResult[] {
  return results.filter((r) => r.sentAt >= from && r.answeredAt <= to);
}

/** Every response in time, none 5xx but 503, every 503 with Retry-After and a retryable code. */
export function expectOnlyOrderlyAnswers(results: LoadResult[], answerWithinMs = 10_000): void {
  expect(results.filter((r) => r.status === 0)).toEqual([]);
  expect(Math.max(...results.map((r) => r.answeredAt - r.sentAt))).toBeLessThan(answerWithinMs);
  expect(results.filter((r) => r.status >= 500 && r.status !== 503)).toEqual([]);
  for (const r of results.filter((x) => x.status === 503)) {
    expect(r).toMatchObject({ errorCode: 'resource_unavailable', retryAfter: expect.any(String) });
  }
}

/**
 * Waits until the load has created `atLeast` runs (since `since`, when given). Reads that fail
 * count as none: right after a thaw a query may still wait behind the database's backlog.
 */
export async function waitForLoadCreates(
  ctx: TestContext,
  prompt: string,
  what: string,
  options: { since?: Date; atLeast?: number; timeoutMs?: number } = {},
): Promise<void> {
  await waitFor(
    async () =>
      (
        (await ctx.dataSource
          .query(`SELECT count(*)::int AS n FROM runs WHERE prompt LIKE $1 AND created_at > $2`, [
            `${prompt}%`,
            options.since ?? new Date(0),
          ])
          .catch(() => [{ n: -1 }])) as [{ n: number }]
      )[0].n,
    (n) => n >= (options.atLeast ?? 3),
    what,
    options.timeoutMs,
  );
}
