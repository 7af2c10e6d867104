import { chmod, rm } from 'node:fs/promises';
import { HOP_BY_HOP_HEADERS } from './hop-by-hop';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { observeRefusal, type RefusalKind } from '../../core/metrics';
import { policyAllowsHost, type NetworkPolicy } from '../../core/network-policy';
import type { OutboundAddressRules } from '../../core/outbound-addresses';
import type { NetworkRefusalRecord } from '../../core/run-events';

/** A connection the egress proxy refused, as the transcript shows it. */
export type NetworkRefusal = NetworkRefusalRecord;

export interface ProxyChannel {
  close(): Promise<void>;
}

/** Connections one sandboxed process may have waiting for a decision (name resolution) at once. */
const MAX_PENDING_DECISIONS = 16;

const HOP_BY_HOP = new Set(HOP_BY_HOP_HEADERS);

/**
 * The only way out of a sandbox: an HTTP proxy (plain requests and CONNECT tunnels) on a Unix
 * socket per sandboxed process. It applies the run's network policy to the host name, resolves
 * the name itself, checks the address against the platform's rules and connects to exactly
 * that address.
 */
export class EgressProxy {
  constructor(private readonly rules: OutboundAddressRules) {}

  /** Listens on `socketPath` for one sandboxed process; `onRefusal` hears every refused connection. */
  async openChannel(
    socketPath: string,
    policy: NetworkPolicy,
    onRefusal: (refusal: NetworkRefusal) => void,
  ): Promise<ProxyChannel> {
    const sockets = new Set<Duplex>();
    const track = (s: Duplex) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    };
    let deciding = 0;
    const decide = async (host: string, port: number) => {
      if (deciding >= MAX_PENDING_DECISIONS) {
        return {
          allowed: false as const,
          reason: `more than ${MAX_PENDING_DECISIONS} connections being set up at once`,
          kind: 'too_many_connections' as const,
        };
      }
      deciding += 1;
      try {
        return await decideOne(host, port);
      } finally {
        deciding -= 1;
      }
    };
    const decideOne = async (host: string, port: number) => {
      const bare = host.replace(/^\[|\]$/g, '');
      if (!Number.isInteger(port) || port < 1 || port > 65535)
        return { allowed: false as const, reason: 'bad port', kind: 'bad_port' as const };
      if (!policyAllowsHost(policy, bare)) {
        const reason =
          policy === 'none'
            ? 'this environment allows no network access (config.network is "none")'
            : `${bare} is not in this environment's allowed domains`;
        return { allowed: false as const, reason, kind: 'network_policy' as const };
      }
      return this.rules.resolve(bare, port);
    };
    const refuse = (host: string, port: number, { reason, kind }: { reason: string; kind: RefusalKind }) => {
      observeRefusal(kind, 'sandbox');
      onRefusal({ host, port, reason });
      return `Refused by the sandbox network policy: ${reason}\n`;
    };

    const server = http.createServer();
    server.on('connection', track);
    server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
      track(client);
      client.on('error', () => client.destroy());
      const target = parseAuthority(req.url ?? '');
      if (!target) {
        client.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
        return;
      }
      void decide(target.host, target.port).then((verdict) => {
        if (!verdict.allowed) {
          const body = refuse(target.host, target.port, verdict);
          client.end(
            `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
          );
          return;
        }
        const upstream = net.connect({ host: verdict.address, port: target.port });
        track(upstream);
        upstream.once('connect', () => {
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        upstream.on('error', (err) => {
          if (upstream.connecting) client.end(`HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n${err.message}\n`);
          else client.destroy();
        });
        client.on('close', () => upstream.destroy());
      });
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      let url: URL;
      try {
        url = new URL(req.url ?? '');
        if (url.protocol !== 'http:') throw new Error('not http');
      } catch {
        res
          .writeHead(400, { 'Content-Type': 'text/plain' })
          .end('This is a proxy: send absolute http:// URLs or CONNECT.\n');
        return;
      }
      const port = url.port ? Number(url.port) : 80;
      void decide(url.hostname, port).then((verdict) => {
        if (!verdict.allowed) {
          res.writeHead(403, { 'Content-Type': 'text/plain' }).end(refuse(url.hostname, port, verdict));
          return;
        }
        const headers: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(req.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
        }
        const upstream = http.request(
          {
            host: verdict.address,
            port,
            method: req.method,
            path: `${url.pathname}${url.search}`,
            headers,
            setHost: false,
          },
          (answer) => {
            const back: Record<string, string | string[]> = {};
            for (const [name, value] of Object.entries(answer.headers)) {
              if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
            }
            res.writeHead(answer.statusCode ?? 502, back);
            answer.pipe(res);
          },
        );
        upstream.on('error', (err) => {
          if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
          res.end(`${err.message}\n`);
        });
        req.pipe(upstream);
      });
    });
    server.on('clientError', (_err, socket) => socket.destroy());

    await rm(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // The sandboxed process runs as another uid; the directory around the socket keeps others out.
    await chmod(socketPath, 0o666);
    return {
      async close() {
        for (const s of sockets) s.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await rm(socketPath, { force: true });
      },
    };
  }
}

/** `host:port` of a CONNECT request (`[v6]:port` too). */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(authority);
  return match ? { host: match[1]!, port: Number(match[2]) } : undefined;
}
