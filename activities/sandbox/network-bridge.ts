/** The port inside every sandbox's own loopback where the egress proxy's bridge listens. */
export const BRIDGE_PORT = 3128;

/** The port inside a sandbox's loopback where a harness reaches the worker's model gateway. */
export const GATEWAY_BRIDGE_PORT = 3129;

/** A Unix socket inside the sandbox, offered as a TCP port on the sandbox's loopback. */
export interface BridgedSocket {
  socketPath: string;
  port: number;
}

/** The bridge's first argument: `socket=port` pairs joined by `;` (the platform picks the paths). */
export function bridgeMappings(sockets: BridgedSocket[]): string {
  return sockets.map((s) => `${s.socketPath}=${s.port}`).join(';');
}

/**
 * Runs inside the sandbox as `node -e BRIDGE_SOURCE <socket=port;...> <argv...>`: forwards TCP
 * connections on the sandbox's loopback to Unix sockets of the worker (the egress proxy, the
 * model gateway; the sandbox has no other network), then runs the command and exits with its
 * status. Plain JavaScript with no imports beyond Node's own, since it runs with the sandbox's
 * view of the filesystem.
 */
export const BRIDGE_SOURCE = `
const net = require('node:net');
const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const [mappings, file, ...args] = process.argv.slice(1);
const pairs = mappings.split(';').map((m) => {
  const at = m.lastIndexOf('=');
  return [m.slice(0, at), Number(m.slice(at + 1))];
});
const listening = pairs.map(([socketPath, port]) => new Promise((resolve) => {
  const server = net.createServer((client) => {
    const upstream = net.connect(socketPath);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  server.on('error', (err) => {
    process.stderr.write('sandbox network bridge failed: ' + err.message + '\\n');
    process.exit(125);
  });
  server.listen(port, '127.0.0.1', resolve);
}));
Promise.all(listening).then(() => {
  const child = spawn(file, args, { stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('error', (err) => {
    process.stderr.write(file + ': ' + err.message + '\\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
});
`;
