import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../core/config';
import type { TemporalTarget } from './connections';
import { embeddedPostgresUrl, isPostgresReachable, startEmbeddedPostgres } from './embedded-postgres';
import { setNamespaceRetention } from './namespace-retention';
import { locateTemporalCli } from './temporal-cli';
import { startTemporalDevServer } from './temporal-dev-server';

export const EMBEDDED_DATABASE = 'agent_runs';

export interface Endpoints {
  databaseUrl: string;
  temporalAddress: string;
  temporalUiUrl?: string;
  embeddedDatabase: boolean;
  embeddedTemporal: boolean;
}

export interface RunningDependencies extends Endpoints {
  stop(): Promise<void>;
}

export const postgresDir = (config: Config) => path.join(config.dataDir, 'postgres');
/** The running dev server's pid, for a start after this process died to stop it (infra/leftovers.ts). */
export const temporalPidFile = (config: Config) => path.join(config.dataDir, 'temporal.pid');

/**
 * Where PostgreSQL and Temporal are, without starting anything: DATABASE_URL and
 * TEMPORAL_ADDRESS when set, else the embedded ones that `npm start` runs from the data dir.
 */
export function resolveEndpoints(config: Config): Endpoints {
  const embeddedDatabase = config.database.url === undefined;
  let databaseUrl = config.database.url;
  if (embeddedDatabase) {
    if (!existsSync(path.join(postgresDir(config), 'password'))) {
      throw new Error(
        `No DATABASE_URL is set and no embedded PostgreSQL exists in ${postgresDir(config)}: run \`npm start\` first, or set DATABASE_URL.`,
      );
    }
    databaseUrl = embeddedPostgresUrl(postgresDir(config), config.database.embeddedPort, EMBEDDED_DATABASE);
  }
  const embeddedTemporal = config.temporal.address === undefined;
  return {
    databaseUrl: databaseUrl!,
    temporalAddress: config.temporal.address ?? `127.0.0.1:${config.temporal.devPort}`,
    temporalUiUrl: embeddedTemporal ? `http://localhost:${config.temporal.uiPort}` : undefined,
    embeddedDatabase,
    embeddedTemporal,
  };
}

/** The Temporal to connect to: the configured one with its TLS and API key, or the embedded dev server. */
export function temporalTarget(
  config: Config,
  endpoints: Pick<Endpoints, 'temporalAddress' | 'embeddedTemporal'>,
): TemporalTarget {
  return {
    address: endpoints.temporalAddress,
    namespace: config.temporal.namespace,
    security: endpoints.embeddedTemporal ? undefined : config.temporal.connection,
  };
}

/** Starts the embedded PostgreSQL and Temporal dev server where no external ones are configured. */
export async function startDependencies(
  config: Config,
  say: (message: string) => void,
  options: {
    temporalUi?: boolean;
    temporalDynamicConfig?: Record<string, string | number | boolean>;
    /** Keep the dev server's workflows in memory instead of the data dir's SQLite file (tests). */
    temporalInMemory?: boolean;
  } = {},
): Promise<RunningDependencies> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => undefined);
  };
  try {
    let databaseUrl = config.database.url;
    if (databaseUrl === undefined) {
      say(`Starting embedded PostgreSQL on port ${config.database.embeddedPort} (data in ${postgresDir(config)})...`);
      const pg = await startEmbeddedPostgres({
        dir: postgresDir(config),
        port: config.database.embeddedPort,
        database: EMBEDDED_DATABASE,
      });
      stops.push(pg.stop);
      databaseUrl = pg.url;
    }
    let temporalAddress = config.temporal.address;
    let temporalUiUrl: string | undefined;
    if (temporalAddress === undefined) {
      const source = await locateTemporalCli({ cliPath: config.temporal.cliPath, say });
      say(
        `Starting Temporal dev server on port ${config.temporal.devPort} (${source.kind === 'path' ? `${source.path}, from ${source.origin}` : 'SDK download'})...`,
      );
      const server = await startTemporalDevServer({
        source,
        namespace: config.temporal.namespace,
        port: config.temporal.devPort,
        uiPort: config.temporal.uiPort,
        httpPort: config.temporal.devHttpPort,
        metricsPort: config.temporal.devMetricsPort,
        ui: options.temporalUi ?? true,
        dynamicConfig: options.temporalDynamicConfig,
        dbFile: options.temporalInMemory ? undefined : path.join(config.dataDir, 'temporal.db'),
        logFile: path.join(config.dataDir, 'temporal.log'),
        pidFile: temporalPidFile(config),
      });
      stops.push(server.stop);
      temporalAddress = server.address;
      temporalUiUrl = server.uiUrl;
      // The dev server's namespace is the service's own: its histories go when their runs do.
      if (config.runRetentionDays !== undefined) {
        await setNamespaceRetention(server.address, config.temporal.namespace, config.runRetentionDays);
        say(`Temporal keeps closed workflows' histories ${config.runRetentionDays} days (RUN_RETENTION_DAYS).`);
      }
    }
    return {
      databaseUrl,
      temporalAddress,
      temporalUiUrl,
      embeddedDatabase: config.database.url === undefined,
      embeddedTemporal: config.temporal.address === undefined,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Runs `fn` against the database, starting the embedded one for the duration when nothing serves it. */
export async function withDatabase<T>(config: Config, fn: (databaseUrl: string) => Promise<T>): Promise<T> {
  if (config.database.url !== undefined) return fn(config.database.url);
  const dir = postgresDir(config);
  if (existsSync(path.join(dir, 'password'))) {
    const url = embeddedPostgresUrl(dir, config.database.embeddedPort, EMBEDDED_DATABASE);
    if (await isPostgresReachable(url)) return fn(url);
  }
  const pg = await startEmbeddedPostgres({ dir, port: config.database.embeddedPort, database: EMBEDDED_DATABASE });
  try {
    return await fn(pg.url);
  } finally {
    await pg.stop();
  }
}
