/**
 * Benchmark: what metrics cost on `POST /agent/runs`. A self-contained stack (embedded
 * PostgreSQL, Temporal dev server, no worker, so only the create path is measured) and two apps
 * built alike on it, one without the HTTP metrics middleware, in alternating rounds. Then what a
 * request's instrumentation costs alone, and what a scrape of `/metrics` takes.
 * Usage: npm run bench:metrics -- [requests=400] [concurrency=1]
 */
import type { Server } from 'node:http';
import { createApp } from '../api/app';
import { closeServer, listen } from '../api/server';
import { createLogger } from '../core/logger';
import { observeHttpRequest, observeRunCreated, renderMetrics } from '../core/metrics';
import { createApiKeyService } from '../services/keys/api-key-service';
import { connectTemporalClient } from '../infra/connections';
import { percentile, startBenchStack, timedConcurrently } from './bench-stack';

const ROUND = 20;
async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 400);
  const concurrency = Number(process.argv[3] ?? 1);
  const stack = await startBenchStack({ name: 'metrics', env: { OPENAI_API_KEY: 'bench' } });
  const { config, secretsKeyring, dataSource } = stack;
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const { connection, client } = await connectTemporalClient({
    address: stack.temporalAddress,
    namespace: config.temporal.namespace,
  });
  const logger = createLogger('error', 'bench');
  const build = () =>
    createApp({ config, dataSource, temporalClient: client, temporalConnection: connection, logger, secretsKeyring });
  const withMetrics = build();
  const without = build();
  without.middleware = without.middleware.filter((m) => m.name !== 'httpMetricsMiddleware');
  if (without.middleware.length !== withMetrics.middleware.length - 1) throw new Error('no metrics middleware found');
  const servers: Server[] = [await listen(withMetrics, 0, '127.0.0.1'), await listen(without, 0, '127.0.0.1')];
  const [on, off] = servers.map((s) => `http://127.0.0.1:${(s.address() as { port: number }).port}/api/v1/agent/runs`);
  const { rawKey } = await createApiKeyService({ config, dataSource }).create({
    kind: 'personal',
    name: 'bench',
    team: 'bench',
  });
  const headers = { Authorization: `Bearer ${rawKey}`, 'content-type': 'application/json' };

  const latencies = { on: [] as number[], off: [] as number[] };
  const round = async (variant: 'on' | 'off', count: number, record = true) => {
    const measured = await timedConcurrently(count, concurrency, async () => {
      const res = await fetch(variant === 'on' ? on! : off!, {
        method: 'POST',
        headers,
        body: JSON.stringify({ prompt: 'x' }),
      });
      if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    });
    if (record) latencies[variant].push(...measured);
  };
  await round('on', ROUND, false); // warm-up
  await round('off', ROUND, false);
  for (let done = 0; done < total; done += ROUND) {
    const count = Math.min(ROUND, total - done);
    const first = (done / ROUND) % 2 === 0 ? 'on' : 'off';
    await round(first, count);
    await round(first === 'on' ? 'off' : 'on', count);
  }
  const line = (name: string, v: number[]) =>
    `${name.padEnd(36)} p50 ${percentile(v, 50).toFixed(2).padStart(6)} ms   p95 ${percentile(v, 95).toFixed(2).padStart(6)} ms   (${v.length})`;
  log(`POST /agent/runs, ${total} of each, ${concurrency} at a time, alternating rounds of ${ROUND}:`);
  log(line('with the HTTP metrics middleware', latencies.on));
  log(line('without it', latencies.off));
  log(
    `difference of medians                ${(percentile(latencies.on, 50) - percentile(latencies.off, 50)).toFixed(2)} ms`,
  );

  // The instrumentation of one create request alone: the request histogram and the run counter.
  const n = 200_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    observeHttpRequest('POST', '/api/v1/agent/runs', 201, 0.004);
    observeRunCreated('api');
  }
  log(`instrumentation of one request      ${(((performance.now() - t0) / n) * 1e6).toFixed(0)} ns`);
  const scrapes: number[] = [];
  for (let i = 0; i < 50; i++) {
    const s0 = performance.now();
    await renderMetrics();
    scrapes.push(performance.now() - s0);
  }
  log(`a scrape of the registry            p50 ${percentile(scrapes, 50).toFixed(2)} ms`);

  for (const s of servers) await closeServer(s);
  await connection.close();
  await stack.stop();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
