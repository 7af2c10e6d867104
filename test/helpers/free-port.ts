import net from 'node:net';

/** Ports this process has handed out: the kernel may offer a just-closed port again at once. */
const handedOut = new Set<number>();

function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A TCP port that was free a moment ago, picked by the kernel, and never one this process was
 * given before (several taken in a row, for one service each, are distinct).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await kernelPort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}
