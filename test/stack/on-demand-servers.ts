import { mkdir } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ensureGitea, startGitea, type Gitea } from '../../infra/gitea';
import { freePort } from '../helpers/free-port';

/** What a test file gets of the run's Gitea (test/helpers/gitea.ts). */
export interface SharedGitea {
  url: string;
  username: string;
  token: string;
}

/**
 * Servers of the test run that only a few test files use, started by the stack on the first
 * file's request and shared by the others (jest's workers are separate processes; the stack
 * outlives them all): `POST /gitea` starts the run's Gitea once and answers its address and
 * administrator token. Listens on loopback; stopped with the stack.
 */
export async function serveOnDemand(dataDir: string): Promise<{ url: string; stop(): Promise<void> }> {
  let gitea: Promise<Gitea> | undefined;
  const startOnce = () => {
    gitea ??= (async () => {
      const dir = path.join(dataDir, 'gitea');
      await mkdir(dir, { mode: 0o755 });
      return startGitea({ binary: await ensureGitea(), dir, port: await freePort() });
    })();
    return gitea;
  };
  const server = http.createServer((request, response) => {
    if (request.method !== 'POST' || request.url !== '/gitea') {
      response.writeHead(404).end();
      return;
    }
    startOnce().then(
      ({ url, username, token }) => {
        const shared: SharedGitea = { url, username, token };
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(shared));
      },
      (err: unknown) => response.writeHead(500).end(err instanceof Error ? err.message : String(err)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      server.close();
      await gitea?.then(
        (g) => g.stop(),
        () => undefined,
      );
    },
  };
}
