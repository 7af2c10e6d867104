import { createServer } from 'node:net';
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../core/logger';

export interface TemporalRuntimeOptions {
  /** Where the SDK's own log lines go. */
  logger: Logger;
  /**
   * `host:port` of the SDK's Prometheus exporter (its `temporal_*` metrics); none when unset.
   * A loopback address: the service's own `/metrics` serves what it exports.
   */
  prometheusBindAddress?: string;
}

const LEVELS: Record<LogLevel, keyof Logger> = {
  TRACE: 'debug',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Installs the process's Temporal runtime (once, before the first worker connection): its log
 * lines through `logger`, its metrics to a Prometheus exporter when asked.
 */
export function installTemporalRuntime(options: TemporalRuntimeOptions): void {
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => options.logger[LEVELS[entry.level]](entry.message, entry.meta)),
    ...(options.prometheusBindAddress
      ? {
          telemetryOptions: {
            metrics: {
              prometheus: {
                bindAddress: options.prometheusBindAddress,
                countersTotalSuffix: true,
                useSecondsForDurations: true,
              },
            },
          },
        }
      : {}),
  });
}

/** A free port on 127.0.0.1 for the SDK's exporter (nothing outside the host needs to reach it). */
export async function freeLoopbackAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `127.0.0.1:${port}`;
}

/**
 * Reads the SDK exporter's text at `bindAddress`, for the service's `/metrics` to append; an
 * unavailable exporter yields a comment line rather than failing the whole scrape.
 */
export function temporalMetricsSource(bindAddress: string): () => Promise<string> {
  return async () => {
    try {
      const res = await fetch(`http://${bindAddress}/metrics`, { signal: AbortSignal.timeout(2000) });
      if (!res.ok) return `# Temporal SDK metrics unavailable: HTTP ${res.status}\n`;
      return await res.text();
    } catch (err) {
      return `# Temporal SDK metrics unavailable: ${(err as Error).message}\n`;
    }
  };
}
