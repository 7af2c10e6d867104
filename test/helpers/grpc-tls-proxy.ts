import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort } from './free-port';
import type { TestCertificates } from './test-certificates';
import { waitFor } from './test-context';

export interface GrpcTlsProxy {
  /** Wants TLS and a client certificate the test CA signed. */
  mtlsAddress: string;
  /** Wants TLS and `authorization: Bearer <apiKey>`; no client certificate. */
  apiKeyAddress: string;
  /** The gRPC requests nginx answered, one line each: `<port> <status> POST /<service>/<method> HTTP/2.0`. */
  requests(): string;
  stop(): Promise<void>;
}

/**
 * nginx config: two TLS listeners passing gRPC to `upstream` (plaintext HTTP/2). Temporal's long
 * polls last about a minute, so reads may take five; request bodies are not limited (history).
 */
function nginxConfig(dir: string, certs: TestCertificates, ports: [number, number], upstream: string, apiKey: string) {
  const tls = `ssl_certificate ${certs.serverCert}; ssl_certificate_key ${certs.serverKey}; ssl_protocols TLSv1.2 TLSv1.3;`;
  const pass = `grpc_pass grpc://${upstream}; grpc_read_timeout 300s; grpc_send_timeout 300s;`;
  return `
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
worker_processes 1;
daemon off;
events { worker_connections 1024; }
http {
  log_format by_port '$server_port $status $request';
  access_log ${dir}/access.log by_port;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  client_max_body_size 0; client_body_timeout 300s; keepalive_timeout 600s; http2_max_requests 1000000;
  map $http_authorization $api_key_ok { default 0; "Bearer ${apiKey}" 1; }
  server {
    listen 127.0.0.1:${ports[0]} ssl http2;
    ${tls}
    ssl_client_certificate ${certs.caCert}; ssl_verify_client on;
    location / { ${pass} }
  }
  server {
    listen 127.0.0.1:${ports[1]} ssl http2;
    ${tls}
    location / {
      if ($api_key_ok = 0) { return 401; }
      ${pass}
    }
  }
}
`;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** Starts nginx (Debian's `nginx-light`) in front of `upstream`, the Temporal frontend. */
export async function startGrpcTlsProxy(
  certs: TestCertificates,
  upstream: string,
  apiKey: string,
): Promise<GrpcTlsProxy> {
  const dir = path.join(certs.dir, 'nginx');
  mkdirSync(dir, { recursive: true });
  const ports: [number, number] = [await freePort(), await freePort()];
  writeFileSync(path.join(dir, 'nginx.conf'), nginxConfig(dir, certs, ports, upstream, apiKey));
  const proc: ChildProcess = spawn('nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', `${dir}/error.log`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await waitFor(
    async () => proc.exitCode === null && (await listening(ports[0])) && (await listening(ports[1])),
    (up) => up || proc.exitCode !== null,
    'nginx to listen',
    30_000,
  );
  if (proc.exitCode !== null) throw new Error(`nginx exited: ${output}${readFileSync(`${dir}/error.log`, 'utf8')}`);
  return {
    mtlsAddress: `127.0.0.1:${ports[0]}`,
    apiKeyAddress: `127.0.0.1:${ports[1]}`,
    requests: () => readFileSync(path.join(dir, 'access.log'), 'utf8'),
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
