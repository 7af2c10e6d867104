/**
 * A local stand-in for an OpenTelemetry collector, to measure what tracing costs the service
 * without a real backend: takes OTLP/HTTP on /v1/traces, answers at once, and counts spans.
 * Usage: npm run bench:otlp-sink -- [port=4318], then OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
 */
import http from 'node:http';

const port = Number(process.argv[2] ?? 4318);
let spans = 0;
let requests = 0;
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    requests += 1;
    spans += (
      Buffer.concat(chunks)
        .toString('utf8')
        .match(/"spanId"/g) ?? []
    ).length;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`OTLP sink on http://127.0.0.1:${port}\n`));
const stop = () => {
  process.stdout.write(`${requests} exports, ${spans} spans\n`);
  server.close(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
