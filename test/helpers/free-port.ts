import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Lowest port handed out: clear of the well-known services a machine may run below it. */
const LOWEST = 15_000;
/** Fewer ports than this outside the kernel's ephemeral range, and the kernel picks instead. */
const ENOUGH = 2_000;

/**
 * Where the ports are, outside the kernel's ephemeral range (`ip_local_port_range`, 32768–60999
 * by default). A port the kernel picked for a listener on port 0 was free at that moment only:
 * until the service we hand it to binds it, any outgoing connection on the machine (a jest
 * worker's, PostgreSQL's, the Temporal dev server's own history and matching services, which
 * listen on port 0) may take it, and the service fails with EADDRINUSE (CI, under a CPU hog). The
 * kernel never picks a port outside that range, for a connection or a listener.
 */
function portRange(): { low: number; high: number } | undefined {
  let ephemeral = [32_768, 60_999];
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) ephemeral = [low!, high!];
  } catch {
    // Not Linux: the default range.
  }
  const [ephemeralLow, ephemeralHigh] = ephemeral as [number, number];
  if (ephemeralLow - 1 - LOWEST >= ENOUGH) return { low: LOWEST, high: ephemeralLow - 1 };
  if (65_535 - ephemeralHigh >= ENOUGH) return { low: ephemeralHigh + 1, high: 65_535 };
  return undefined;
}

/**
 * Claims `port` for this test run, across its processes (the jest workers, the stack's process,
 * the private PostgreSQLs): the first to create its file under the run's TMPDIR has it, and no
 * other process of the run is handed it again.
 */
function claim(port: number): boolean {
  const dir = path.join(os.tmpdir(), 'agent-runs-test-ports');
  mkdirSync(dir, { recursive: true, mode: 0o777 });
  try {
    closeSync(openSync(path.join(dir, String(port)), 'wx'));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

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

const range = portRange();
/** Where this process looks next: a random start, so that processes seldom contend for a claim. */
let next = range ? range.low + Math.floor(Math.random() * (range.high - range.low + 1)) : 0;

/**
 * A loopback TCP port no other part of this test run was given and nothing listens on, outside
 * the kernel's ephemeral range so that nothing takes it before the service it is for binds it.
 * Several taken in a row, for one service each, are distinct.
 */
export async function freePort(): Promise<number> {
  if (!range) {
    for (;;) {
      const port = await kernelPort();
      if (claim(port)) return port;
    }
  }
  const size = range.high - range.low + 1;
  for (let tried = 0; tried < size; tried++) {
    const port = next;
    next = next === range.high ? range.low : next + 1;
    if (claim(port) && (await bindable(port))) return port;
  }
  throw new Error(`no free port left in ${range.low}–${range.high} for this test run`);
}
