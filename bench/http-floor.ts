import { createServer } from 'node:http';

/**
 * The floor of any HTTP API that starts a workflow: a bare `node:http` server that answers each
 * POST with 201 once `start` resolves, with no framework, authentication or database. The
 * benchmark measures it beside the API, so that what an HTTP hop costs on the machine is told
 * apart from what the API itself adds.
 */
export async function startHttpFloor(start: () => Promise<string>): Promise<{ url: string; stop(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      start().then(
        (runId) => {
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ run_id: runId }));
        },
        (err: unknown) => {
          res.writeHead(503, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
