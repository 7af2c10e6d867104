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
 * embedded PostgreSQL's and Temporal dev server's (gRPC and Web UI) where nothing external is
 * configured. Port 0 (any free port) is left out.
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

/** Throws `PortUnavailableError` naming the first port that is taken (or given twice) and its variable. */
export async function assertPortsFree(ports: PlannedPort[]): Promise<void> {
  for (const [i, p] of ports.entries()) {
    const twin = ports.slice(0, i).find((q) => q.port === p.port);
    if (twin) {
      throw new PortUnavailableError(
        `${twin.variable} and ${p.variable} are both ${p.port}: set ${p.variable} to another port.`,
      );
    }
    const problem = await portProblem(p.port, p.host);
    if (problem === null) continue;
    const why = problem === 'EADDRINUSE' ? 'is already in use' : `cannot be listened on (${problem})`;
    const suggestion = await freePortNear(
      p.port,
      p.host,
      ports.map((q) => q.port),
    );
    throw new PortUnavailableError(
      `Port ${p.port} for ${p.what} ${why} on ${p.host}: stop what holds it, or set ${p.variable} to a free port` +
        (suggestion ? ` (e.g. ${p.variable}=${suggestion}).` : '.'),
    );
  }
}
