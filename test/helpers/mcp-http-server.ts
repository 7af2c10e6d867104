import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A real Streamable HTTP MCP server (stateless) for the tests. Tool `lookup` answers from a
 * table; every request must carry `authorization: Bearer <token>`.
 */
export async function startMcpHttpServer(
  token: string,
  table: Record<string, string>,
): Promise<{ url: string; stop(): Promise<void>; calls: string[] }> {
  const calls: string[] = [];
  const httpServer = http.createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end('unauthorized');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
      const server = new McpServer({ name: 'fixture-http', version: '1.0.0' });
      server.registerTool(
        'lookup',
        { description: 'Look a key up in the table', inputSchema: { key: z.string() } },
        ({ key }) => {
          calls.push(key);
          return { content: [{ type: 'text', text: table[key] ?? `no entry for ${key}` }] };
        },
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      void server.connect(transport).then(() => transport.handleRequest(req, res, body));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`,
    calls,
    stop: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
