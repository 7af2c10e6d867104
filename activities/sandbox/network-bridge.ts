/** The port inside every sandbox's own loopback where the proxy bridge listens. */
export const BRIDGE_PORT = 3128;

/**
 * Runs inside the sandbox as `node -e BRIDGE_SOURCE <socket> <port> <argv...>`: forwards TCP
 * connections on the sandbox's loopback to the egress proxy's Unix socket (the sandbox has no
 * other network), then runs the command and exits with its status. Plain JavaScript with no
 * imports beyond Node's own, since it runs with the sandbox's view of the filesystem.
 */
export const BRIDGE_SOURCE = `
const net = require('node:net');
const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const [socketPath, port, file, ...args] = process.argv.slice(1);
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
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(file, args, { stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('error', (err) => {
    process.stderr.write(file + ': ' + err.message + '\\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
});
`;
