import net from 'node:net';
import type { Config } from '../core/config';

/** A port `npm start` is about to listen on, and the variable that moves it. */
export interface PlannedPort {
  port: number;
  host: string;
  variable: string;
  what: string;
}

/** Says which port cannot be had and which variable changes it; `npm start` prints only this line. */
export class PortUnavailableError extends Error {}

/**
 * The ports `npm start` listens on, as `startDependencies` picks them: the API's, and the
 * embedded PostgreSQL's and Temporal dev server's (gRPC, HTTP API, metrics and Web UI) where
 * nothing external is configured. Port 0 (any free port) is left out.
 */
export function plannedPorts(config: Config, options: { temporalUi?: boolean } = {}): PlannedPort[] {
  const ports: PlannedPort[] = [{ port: config.port, host: config.host, variable: 'PORT', what: 'the API' }];
  if (config.database.url === undefined) {
    ports.push({
      port: config.database.embeddedPort,
      host: '127.0.0.1',
      variable: 'EMBEDDED_POSTGRES_PORT',
      what: 'the embedded PostgreSQL',
    });
  }
  if (config.temporal.address === undefined) {
    ports.push({
      port: config.temporal.devPort,
      host: '127.0.0.1',
      variable: 'TEMPORAL_DEV_PORT',
      what: 'the Temporal dev server',
    });
    ports.push(
      {
        port: config.temporal.devHttpPort,
        host: '127.0.0.1',
        variable: 'TEMPORAL_DEV_HTTP_PORT',
        what: "the Temporal dev server's HTTP API",
      },
      {
        port: config.temporal.devMetricsPort,
        host: '127.0.0.1',
        variable: 'TEMPORAL_DEV_METRICS_PORT',
        what: "the Temporal dev server's metrics",
      },
    );
    if (options.temporalUi ?? true) {
      ports.push({
        port: config.temporal.uiPort,
        host: '127.0.0.1',
        variable: 'TEMPORAL_UI_PORT',
        what: 'the Temporal UI',
      });
    }
  }
  return ports.filter((p) => p.port !== 0);
}

/** Why `port` cannot be listened on at `host` (an error code such as EADDRINUSE), or null when it can. */
export function portProblem(port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/** A port near `from` that can be listened on and is not among `avoid`, to suggest; undefined when none is. */
async function freePortNear(from: number, host: string, avoid: number[]): Promise<number | undefined> {
  for (let port = from + 1; port <= Math.min(from + 50, 65535); port += 1) {
    if (!avoid.includes(port) && (await portProblem(port, host)) === null) return port;
  }
  return undefined;
}

/**
 * What is wrong with `p` among `ports` (given twice, or taken), or null when it can be listened
 * on. A port it suggests joins `avoid`, so that two clashes never get the same suggestion.
 */
async function portClash(p: PlannedPort, i: number, ports: PlannedPort[], avoid: number[]): Promise<string | null> {
  const twin = ports.slice(0, i).find((q) => q.port === p.port);
  if (twin) return `${twin.variable} and ${p.variable} are both ${p.port}: set ${p.variable} to another port.`;
  const problem = await portProblem(p.port, p.host);
  if (problem === null) return null;
  const why = problem === 'EADDRINUSE' ? 'is already in use' : `cannot be listened on (${problem})`;
  const suggestion = await freePortNear(p.port, p.host, avoid);
  if (suggestion !== undefined) avoid.push(suggestion);
  return (
    `Port ${p.port} for ${p.what} ${why} on ${p.host}: stop what holds it, or set ${p.variable} to a free port` +
    (suggestion ? ` (e.g. ${p.variable}=${suggestion}).` : '.')
  );
}

/**
 * Checks every planned port before anything starts and throws one `PortUnavailableError` with a
 * line per port that is taken (or given twice), each naming its variable: one restart fixes all.
 */
export async function assertPortsFree(ports: PlannedPort[]): Promise<void> {
  const clashes: string[] = [];
  const avoid = ports.map((q) => q.port);
  for (const [i, p] of ports.entries()) {
    const clash = await portClash(p, i, ports, avoid);
    if (clash !== null) clashes.push(clash);
  }
  if (clashes.length === 1) throw new PortUnavailableError(clashes[0]);
  if (clashes.length > 1) {
    throw new PortUnavailableError(
      `${clashes.length} ports cannot be had:\n${clashes.map((c) => `  ${c}`).join('\n')}`,
    );
  }
}
