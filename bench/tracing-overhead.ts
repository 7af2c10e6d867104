/**
 * What tracing costs `POST /agent/runs`: two APIs in one process on one private stack, one with
 * tracing (HTTP span, Temporal client interceptor, export to a local OTLP sink) and one without,
 * asked in alternating rounds so that the machine's drift hits both alike. No worker runs: only
 * the create path is measured. Prints p50/p95 and this process's CPU time per request of each.
 * Usage: npx tsx bench/tracing-overhead.ts [requests=400] [concurrency=1]
 */
import type { AddressInfo } from 'node:net';
import { createApp } from '../api/app';
import { closeServer, listen } from '../api/server';
import { type Config } from '../core/config';
import { createLogger } from '../core/logger';
import { createApiKeyService } from '../services/keys/api-key-service';
import { connectTemporalClient } from '../infra/connections';
import { startTracing } from '../infra/tracing';
import { percentile, startBenchStack } from './bench-stack';
import { createOtlpSink } from './otlp-sink';

const ROUND = 20;
async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 400);
  const concurrency = Number(process.argv[3] ?? 1);
  const { server: sink, counts } = createOtlpSink();
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const stack = await startBenchStack({ name: 'tracing', env: { OPENAI_API_KEY: 'bench' } });
  const { config: off, secretsKeyring, dataSource } = stack;
  const on: Config = {
    ...off,
    tracing: { tracesUrl: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`, headers: {} },
  };
  const tracing = startTracing(on, 'agent-runs-bench');
  const logger = createLogger('error', 'bench');
  const apis = await Promise.all(
    [
      { config: off, tracing: undefined },
      { config: on, tracing },
    ].map(async ({ config, tracing: t }) => {
      const { connection, client } = await connectTemporalClient(
        { address: stack.temporalAddress, namespace: config.temporal.namespace },
        t,
      );
      const app = createApp({
        config,
        dataSource,
        temporalClient: client,
        temporalConnection: connection,
        logger,
        secretsKeyring,
      });
      const server = await listen(app, 0, '127.0.0.1');
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/agent/runs`;
      return { url, server, connection, latencies: [] as number[], cpuMs: 0 };
    }),
  );
  const { rawKey } = await createApiKeyService({ config: off, dataSource }).create({
    kind: 'personal',
    name: 'bench',
    team: 'bench',
  });
  const headers = { Authorization: `Bearer ${rawKey}`, 'content-type': 'application/json' };
  const round = async (api: (typeof apis)[number], count: number, record = true) => {
    let left = count;
    const cpu = process.cpuUsage();
    await Promise.all(
      Array.from({ length: Math.min(concurrency, count) }, async () => {
        while (left > 0) {
          left -= 1;
          const t0 = performance.now();
          const res = await fetch(api.url, { method: 'POST', headers, body: JSON.stringify({ prompt: 'x' }) });
          if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
          if (record) api.latencies.push(performance.now() - t0);
        }
      }),
    );
    const used = process.cpuUsage(cpu);
    if (record) api.cpuMs += (used.user + used.system) / 1000;
  };
  const [plain, traced] = apis as [(typeof apis)[number], (typeof apis)[number]];
  await round(plain, ROUND, false);
  await round(traced, ROUND, false);
  for (let done = 0; done < total; done += ROUND) {
    const count = Math.min(ROUND, total - done);
    const [first, second] = (done / ROUND) % 2 === 0 ? [plain, traced] : [traced, plain];
    await round(first, count);
    await round(second, count);
  }
  await tracing?.shutdown();
  const line = (name: string, api: (typeof apis)[number]) =>
    `${name.padEnd(16)} p50 ${percentile(api.latencies, 50).toFixed(1).padStart(6)} ms   p95 ${percentile(
      api.latencies,
      95,
    )
      .toFixed(1)
      .padStart(6)} ms   CPU ${(api.cpuMs / api.latencies.length).toFixed(2)} ms/request`;
  const out = (m: string) => process.stdout.write(`${m}\n`);
  out(`POST /agent/runs, ${total} of each, ${concurrency} at a time, alternating rounds of ${ROUND}:`);
  out(line('tracing off', plain));
  out(line('tracing on', traced));
  out(
    `difference       p50 ${(percentile(traced.latencies, 50) - percentile(plain.latencies, 50)).toFixed(1)} ms, ` +
      `CPU ${((traced.cpuMs - plain.cpuMs) / total).toFixed(2)} ms/request; ${counts.spans} spans exported`,
  );

  for (const api of apis) {
    await closeServer(api.server);
    await api.connection.close();
  }
  await stack.stop();
  sink.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
