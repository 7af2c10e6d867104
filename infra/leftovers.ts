import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../core/config';
import { postgresDir, temporalPidFile } from './runtime';

/** A process a previous `npm start` on this data directory left running, and how to stop it. */
interface Leftover {
  what: string;
  pid: number;
  /** Its first signal: the one that stops it cleanly. */
  signal: NodeJS.Signals;
  /** Where its pid came from, removed once it is gone (PostgreSQL removes its own). */
  pidFile?: string;
}

function pidIn(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The command line of a live process, or undefined when there is none: gone, or a zombie whose
 * threads have all exited. A multithreaded program's leader shows as a zombie while its other
 * threads still exit, holding its sockets (the ports a start needs) until the last one has.
 */
function liveCommandLine(pid: number): string | undefined {
  try {
    const zombie = /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    if (zombie && readdirSync(`/proc/${pid}/task`).length <= 1) return undefined;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/** The embedded servers of this data directory still running: only a process whose command line says it is one counts (pids are reused). */
function findLeftovers(config: Config): Leftover[] {
  const found: Leftover[] = [];
  const pgdata = path.join(postgresDir(config), 'pgdata');
  const postmaster = config.database.url === undefined ? pidIn(path.join(pgdata, 'postmaster.pid')) : undefined;
  if (postmaster !== undefined && liveCommandLine(postmaster)?.includes(`postgres -D ${pgdata}`)) {
    found.push({ what: 'PostgreSQL', pid: postmaster, signal: 'SIGINT' });
  }
  const pidFile = temporalPidFile(config);
  const temporal = config.temporal.address === undefined ? pidIn(pidFile) : undefined;
  if (temporal !== undefined && liveCommandLine(temporal)?.includes('server start-dev')) {
    found.push({ what: 'Temporal dev server', pid: temporal, signal: 'SIGTERM', pidFile });
  } else {
    rmSync(pidFile, { force: true });
  }
  return found;
}

async function stopProcess(leftover: Leftover, graceMs: number): Promise<void> {
  const gone = () => liveCommandLine(leftover.pid) === undefined;
  const waitGone = async (ms: number) => {
    const deadline = Date.now() + ms;
    while (!gone() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    return gone();
  };
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(leftover.pid, s);
    } catch {
      // gone meanwhile
    }
  };
  signal(leftover.signal);
  if (!(await waitGone(graceMs))) {
    signal('SIGKILL');
    await waitGone(5000);
  }
  if (leftover.pidFile) rmSync(leftover.pidFile, { force: true });
}

/**
 * Stops the embedded PostgreSQL and Temporal dev server that a previous `npm start` on this data
 * directory left running (it died where it could neither stop them nor have the kernel do it),
 * so that this start gets their ports. Call only while holding the data directory's lock: then
 * their instance is gone. Says what it stopped.
 */
export async function stopLeftovers(config: Config, say: (message: string) => void): Promise<void> {
  for (const leftover of findLeftovers(config)) {
    say(`Stopping the ${leftover.what} (pid ${leftover.pid}) that a previous start left running...`);
    await stopProcess(leftover, 30_000);
  }
}
