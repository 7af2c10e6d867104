/**
 * A local stand-in for an OpenTelemetry collector, to measure what tracing costs the service
 * without a real backend: takes OTLP/HTTP (JSON) on /v1/traces, answers at once, and counts spans.
 * Usage: npx tsx bench/otlp-sink.ts [port=4318], then OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
 */
import http from 'node:http';

export interface OtlpSink {
  server: http.Server;
  counts: { requests: number; spans: number };
}

export function createOtlpSink(): OtlpSink {
  const counts = { requests: 0, spans: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      counts.requests += 1;
      counts.spans += (
        Buffer.concat(chunks)
          .toString('utf8')
          .match(/"spanId"/g) ?? []
      ).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, counts };
}

if (require.main === module) {
  const port = Number(process.argv[2] ?? 4318);
  const { server, counts } = createOtlpSink();
  server.listen(port, '127.0.0.1', () => process.stdout.write(`OTLP sink on http://127.0.0.1:${port}\n`));
  const stop = () => {
    process.stdout.write(`${counts.requests} exports, ${counts.spans} spans\n`);
    server.close(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
