import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the proxy may hold: its method and path. */
export type HeldRequest = (req: { method: string; url: string }) => boolean;

/**
 * A forge (the test run's Gitea) behind a forwarding proxy, as the service's GIT_BASE_URL. Armed
 * with a matcher, it forwards the next matching request (so the forge acts on it) but holds its
 * answer until released, then loses it (503): as a worker that dies, or a network that fails,
 * after the forge acted.
 */
export interface ForgeProxy {
  /** `host:port` of the proxy. */
  host: string;
  /** Resolves when a matching request's answer is held; the answer is lost once `release` resolves. */
  arm(matches: HeldRequest, release: Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export async function startForgeProxy(target: string): Promise<ForgeProxy> {
  let armed: { matches: HeldRequest; held: () => void; release: Promise<void> } | undefined;
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
      (answer) => {
        const trap = armed?.matches({ method: req.method ?? '', url: req.url ?? '' }) ? armed : undefined;
        if (!trap) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        armed = undefined;
        answer.resume();
        trap.held();
        void trap.release.then(() => {
          if (!res.destroyed) res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"lost"}');
        });
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    arm: (matches, release) => new Promise((held) => (armed = { matches, held, release })),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Gitea's answer to opening a pull request. */
export const OPENS_PULL_REQUEST: HeldRequest = (req) => req.method === 'POST' && /\/pulls$/.test(req.url);

/** Git's push over smart HTTP (`git-receive-pack`). */
export const PUSHES: HeldRequest = (req) => req.method === 'POST' && /\/git-receive-pack$/.test(req.url);
