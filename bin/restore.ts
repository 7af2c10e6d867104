import { ConfigError, loadConfig } from '../core/config';
import { connectTemporalClient, openDataSource } from '../infra/connections';
import { resolveEndpoints, temporalTarget } from '../infra/runtime';
import { assertSchemaCurrent } from '../infra/schema-check';
import { checkConsistency } from '../services/restore/consistency-check';
import { parseCommand, reportJson, reportText, UsageError } from './restore-command';

/**
 * `npm run restore -- check`: after a restore of PostgreSQL, the runs whose state differs between
 * PostgreSQL and Temporal (docs/operations.md, Backup and restore). Exit 0 when they agree, 1
 * when some differ, 2 when it could not tell.
 */
async function main(argv: string[]): Promise<number> {
  const command = parseCommand(argv);
  const config = loadConfig();
  const endpoints = resolveEndpoints(config);
  const dataSource = await openDataSource(endpoints.databaseUrl, { poolSize: 4 });
  try {
    await assertSchemaCurrent(dataSource, 'The restore command');
    const { connection, client } = await connectTemporalClient(temporalTarget(config, endpoints));
    try {
      const report = await checkConsistency(
        {
          dataSource,
          temporal: client,
          taskQueue: config.temporal.taskQueue,
          rpcTimeoutMs: config.temporal.rpcTimeoutMs,
        },
        { quietSeconds: command.quietSeconds },
      );
      process.stdout.write(command.json ? reportJson(report) : reportText(report));
      return report.differences.length ? 1 : 0;
    } finally {
      await connection.close();
    }
  } finally {
    await dataSource.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    // A command line or a configuration to change says everything in its message; anything else needs its stack.
    const plain = err instanceof UsageError || err instanceof ConfigError;
    const text = err instanceof Error ? (plain ? err.message : (err.stack ?? err.message)) : String(err);
    process.stderr.write(`${err instanceof UsageError ? '' : 'The restore check failed: '}${text}\n`);
    process.exit(2);
  },
);
