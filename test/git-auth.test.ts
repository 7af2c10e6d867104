import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cloneRepository, CloneError } from '../activities/workspace/git';
import { createTestSandbox } from './helpers/sandbox';

/** An HTTP server that refuses every git request but records the Authorization header it got. */
async function refusingGitServer(): Promise<{ url: string; headers: string[]; close(): Promise<void> }> {
  const headers: string[] = [];
  const server = http.createServer((req, res) => {
    headers.push(req.headers.authorization ?? '');
    res.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    headers,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

test('GIT_TOKEN is sent to the git host and never appears in the error', async () => {
  const server = await refusingGitServer();
  const token = 'ghp_SECRETtoken1234567890';
  const { processes } = await createTestSandbox();
  try {
    const err = await cloneRepository(await processes('run-1'), `${server.url}/acme/private`, 'x', { token }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CloneError);
    expect((err as Error).message).toContain('acme/private');
    expect((err as Error).message).not.toContain(token);
    const expected = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
    expect(server.headers).toContain(expected);
  } finally {
    await server.close();
  }
});
