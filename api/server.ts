import type { Server } from 'node:http';
import type Koa from 'koa';

const closeHooks = new WeakMap<Koa, (() => Promise<void>)[]>();
const closedHooks = new WeakMap<Koa, (() => Promise<void>)[]>();
const appOfServer = new WeakMap<Server, Koa>();

/**
 * Work to do when a server of `app` closes (`closeServer`), before it waits for its connections:
 * ending long-lived responses such as event streams, which would otherwise hold it open.
 */
export function onServerClose(app: Koa, hook: () => Promise<void>): void {
  closeHooks.set(app, [...(closeHooks.get(app) ?? []), hook]);
}

/**
 * Work to do once a server of `app` has closed every connection (`closeServer`): what the
 * requests left behind them, such as keys' last uses, which no request can add to any more.
 */
export function onServerClosed(app: Koa, hook: () => Promise<void>): void {
  closedHooks.set(app, [...(closedHooks.get(app) ?? []), hook]);
}

/** Starts listening and resolves with the bound server (port 0 picks a free port). */
export function listen(app: Koa, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    appOfServer.set(server, app);
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

/**
 * Stops taking connections, ends the app's long-lived responses, and resolves once every
 * connection has closed and the app's `onServerClosed` work is done.
 */
export async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const app = appOfServer.get(server);
  await Promise.all((app ? (closeHooks.get(app) ?? []) : []).map((hook) => hook()));
  await closed;
  await Promise.all((app ? (closedHooks.get(app) ?? []) : []).map((hook) => hook()));
}
