let shuttingDown = false;

/**
 * Marks this process as shutting down on SIGINT and SIGTERM, before any other handler runs, so
 * that parts which watch connections can tell a shutdown from a fault. Ctrl-C reaches the whole
 * process group: `npm start`'s embedded PostgreSQL closes its connections at the same moment.
 * Only entry points install it (a listener keeps Node from exiting on the signal by itself).
 */
export function watchShutdownSignals(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.prependListener(signal, () => {
      shuttingDown = true;
    });
  }
}

export function isShuttingDown(): boolean {
  return shuttingDown;
}
