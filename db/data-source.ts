import { DataSource, type DataSourceOptions } from 'typeorm';
import type { Logger } from '../core/logger';
import { createDatabaseGate, type DatabaseGate, type DatabaseState } from './database-gate';
import { guardedPg } from './guarded-pg';
import { InitialSchema1763780000000 } from './migrations/1763780000000-initial-schema';
import { Environments1763790000000 } from './migrations/1763790000000-environments';
import { WorkerLeases1763800000000 } from './migrations/1763800000000-worker-leases';
import { CancelFollowupSeq1763810000000 } from './migrations/1763810000000-cancel-followup-seq';
import { TranscriptPageIndexes1763820000000 } from './migrations/1763820000000-transcript-page-indexes';
import { AgentIdentities1763830000000 } from './migrations/1763830000000-agent-identities';
import { Schedules1763840000000 } from './migrations/1763840000000-schedules';
import { Artifacts1763850000000 } from './migrations/1763850000000-artifacts';
import { Factories1763860000000 } from './migrations/1763860000000-factories';
import { RunEventsNotify1763870000000 } from './migrations/1763870000000-run-events-notify';
import { Webhooks1763880000000 } from './migrations/1763880000000-webhooks';
import { ListIndexes1763890000000 } from './migrations/1763890000000-list-indexes';
import { RateLimitsAndQuotas1763900000000 } from './migrations/1763900000000-rate-limits-and-quotas';
import { ResourceListIndexes1763910000000 } from './migrations/1763910000000-resource-list-indexes';
import { RunEventOrder1763920000000 } from './migrations/1763920000000-run-event-order';
import { SkillLoadIndex1763921800000 } from './migrations/1763921800000-skill-load-index';
import { KeyRoles1763930000000 } from './migrations/1763930000000-key-roles';
import { WorkspaceHolders1763940000000 } from './migrations/1763940000000-workspace-holders';
import { Harnesses1763950000000 } from './migrations/1763950000000-harnesses';
import { RootRun1763955000000 } from './migrations/1763955000000-root-run';
import { IdentityHarnesses1763958000000 } from './migrations/1763958000000-identity-harnesses';
import { HarnessStepAttempts1763960000000 } from './migrations/1763960000000-harness-step-attempts';
import { FactoryTasks1763962000000 } from './migrations/1763962000000-factory-tasks';
import { ExternalReferences1763964000000 } from './migrations/1763964000000-external-references';
import { RunImages1763966000000 } from './migrations/1763966000000-run-images';
import { HarnessUsageCounted1763968000000 } from './migrations/1763968000000-harness-usage-counted';
import { MalformedSkills1763969400000 } from './migrations/1763969400000-malformed-skills';
import { StepInFlight1763970000000 } from './migrations/1763970000000-step-in-flight';
import { BlobObjects1763971000000 } from './migrations/1763971000000-blob-objects';
import { Checkpoints1763972000000 } from './migrations/1763972000000-checkpoints';
import { RunForks1763973000000 } from './migrations/1763973000000-run-forks';
import { UnreferencedObjects1763974000000 } from './migrations/1763974000000-unreferenced-objects';
import { CheckpointHarnessSessions1763975000000 } from './migrations/1763975000000-checkpoint-harness-sessions';
import { KeyLifecycle1763976300000 } from './migrations/1763976300000-key-lifecycle';
import { RunRetentionIndex1763977000000 } from './migrations/1763977000000-run-retention-index';
import { AuditEvents1763978000000 } from './migrations/1763978000000-audit-events';
import { RunApprovals1763978500000 } from './migrations/1763978500000-run-approvals';
import { DeletionIndexes1763978600000 } from './migrations/1763978600000-deletion-indexes';
import { RunPlans1763978750000 } from './migrations/1763978750000-run-plans';
import { RunPullRequests1763979000000 } from './migrations/1763979000000-run-pull-requests';
import { WebhookPullRequests1763979100000 } from './migrations/1763979100000-webhook-pull-requests';
import { IdentityDelivery1763979200000 } from './migrations/1763979200000-identity-delivery';
import { WebhookPullRequestChanges1763979300000 } from './migrations/1763979300000-webhook-pull-request-changes';

export const MIGRATIONS = [
  InitialSchema1763780000000,
  Environments1763790000000,
  WorkerLeases1763800000000,
  CancelFollowupSeq1763810000000,
  TranscriptPageIndexes1763820000000,
  AgentIdentities1763830000000,
  Schedules1763840000000,
  Artifacts1763850000000,
  Factories1763860000000,
  RunEventsNotify1763870000000,
  Webhooks1763880000000,
  ListIndexes1763890000000,
  RateLimitsAndQuotas1763900000000,
  ResourceListIndexes1763910000000,
  RunEventOrder1763920000000,
  SkillLoadIndex1763921800000,
  KeyRoles1763930000000,
  WorkspaceHolders1763940000000,
  Harnesses1763950000000,
  RootRun1763955000000,
  IdentityHarnesses1763958000000,
  HarnessStepAttempts1763960000000,
  FactoryTasks1763962000000,
  ExternalReferences1763964000000,
  RunImages1763966000000,
  HarnessUsageCounted1763968000000,
  MalformedSkills1763969400000,
  StepInFlight1763970000000,
  BlobObjects1763971000000,
  Checkpoints1763972000000,
  RunForks1763973000000,
  UnreferencedObjects1763974000000,
  CheckpointHarnessSessions1763975000000,
  KeyLifecycle1763976300000,
  RunRetentionIndex1763977000000,
  AuditEvents1763978000000,
  RunApprovals1763978500000,
  DeletionIndexes1763978600000,
  RunPlans1763978750000,
  RunPullRequests1763979000000,
  WebhookPullRequests1763979100000,
  IdentityDelivery1763979200000,
  WebhookPullRequestChanges1763979300000,
];

/** How long a probe of an unreachable database may take to connect, and then to answer. */
const PROBE_TIMEOUT_MS = 2000;

/** A DataSource whose pool answers to a DatabaseGate (db/database-gate.ts). */
class GatedDataSource extends DataSource {
  constructor(
    options: DataSourceOptions,
    readonly gate: DatabaseGate,
  ) {
    super(options);
  }

  override async destroy(): Promise<void> {
    this.gate.stop();
    await super.destroy();
  }
}

/** Builds (does not open) the DataSource; schema changes only through MIGRATIONS. */
export function createDataSource(
  databaseUrl: string,
  options: { poolSize?: number; queryTimeoutMs?: number; logger?: Logger } = {},
): DataSource {
  const gate = createDatabaseGate({
    databaseUrl,
    probeTimeoutMs: Math.min(options.queryTimeoutMs ?? PROBE_TIMEOUT_MS, PROBE_TIMEOUT_MS),
    logger: options.logger,
  });
  return new GatedDataSource(
    {
      type: 'postgres',
      url: databaseUrl,
      driver: guardedPg(gate),
      // No TypeORM entities: every query is SQL of db/, behind a function named for what it does.
      entities: [],
      migrations: MIGRATIONS,
      synchronize: false,
      migrationsRun: false,
      migrationsTransactionMode: 'each',
      // A frozen or unreachable database fails a query in bounded time instead of holding it open.
      extra: {
        max: options.poolSize ?? 10,
        connectionTimeoutMillis: 5000,
        ...(options.queryTimeoutMs ? queryTimeouts(options.queryTimeoutMs) : {}),
      },
    },
    gate,
  );
}

/**
 * The server cancels a slow statement a little before the client gives up on it (the statement's
 * locks go with it and the connection stays good); the client's own read timeout then only fires
 * when the server does not answer at all, and that connection is closed (db/guarded-pg.ts).
 */
function queryTimeouts(queryTimeoutMs: number): { query_timeout: number; statement_timeout: number } {
  return { query_timeout: queryTimeoutMs, statement_timeout: queryTimeoutMs - Math.min(1000, queryTimeoutMs / 4) };
}

/** Whether PostgreSQL answers the DataSource's process, as its gate last found. */
export function databaseStateOf(dataSource: DataSource): DatabaseState {
  return dataSource instanceof GatedDataSource ? dataSource.gate.state : 'reachable';
}

/** Applies pending migrations; safe to run concurrently from several processes. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  // An advisory lock keeps two processes starting at once from racing on the same migration.
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock(727274)');
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await runner.query('SELECT pg_advisory_unlock(727274)').catch(() => undefined);
    await runner.release();
  }
}
