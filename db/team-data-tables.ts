/**
 * Where a team's data is, table by table (for deleting a team: services/teams/team-deletion.ts).
 * Each table that holds a team's rows says which rows (`rows`: a condition on the table's rows,
 * `$1` the team's id) and what deletes them: the run deletion (`runs`: its rows and what cascades
 * from them) or the team deletion itself (`team`: in this order, a batch at a time). Every table
 * of the schema is either here, in KEPT_TABLES or in SHARED_TABLES, which test/run-deletion.test.ts checks
 * against the database: a new table with a `team_id`, `run_id` or `principal_uid` column, or a
 * foreign key to a table here, fails it until it is added.
 */
export interface TeamTable {
  table: string;
  rows: string;
  deletedBy: 'runs' | 'team';
  /** Of those rows, the ones that can go now (a key that a rotation's older key names waits for it). */
  deletableNow?: string;
}

const TEAM_RUNS = `run_id IN (SELECT run_id FROM runs WHERE team_id = $1)`;
const TEAM_PRINCIPALS = `principal_uid IN (SELECT uid FROM principals WHERE team_id = $1)`;

export const TEAM_TABLES: readonly TeamTable[] = [
  // db/run-deletion.ts deleteRunRows: these, and what cascades from the runs.
  { table: 'runs', rows: `team_id = $1`, deletedBy: 'runs' },
  { table: 'run_events', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'webhook_events', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'followups', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'blobs', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'artifacts', rows: `team_id = $1`, deletedBy: 'runs' },
  { table: 'run_attachments', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'handoff_attachments', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'checkpoints', rows: `team_id = $1`, deletedBy: 'runs' },
  {
    table: 'checkpoint_objects',
    rows: `checkpoint_id IN (SELECT checkpoint_id FROM checkpoints WHERE team_id = $1)`,
    deletedBy: 'runs',
  },
  { table: 'run_lineage', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'run_approvals', rows: `team_id = $1`, deletedBy: 'runs' },
  { table: 'run_workspaces', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'run_harness_state', rows: TEAM_RUNS, deletedBy: 'runs' },
  { table: 'run_external_references', rows: `team_id = $1`, deletedBy: 'runs' },
  { table: 'run_plans', rows: `team_id = $1`, deletedBy: 'runs' },
  { table: 'run_pull_requests', rows: `team_id = $1`, deletedBy: 'runs' },
  // The team's own, once its runs are gone, each before what it names.
  {
    table: 'webhook_deliveries',
    rows: `webhook_id IN (SELECT id FROM webhooks WHERE team_id = $1)`,
    deletedBy: 'team',
  },
  { table: 'webhooks', rows: `team_id = $1`, deletedBy: 'team' },
  // Their Temporal Schedules are deleted first (services/teams/team-deletion.ts).
  { table: 'schedules', rows: `team_id = $1`, deletedBy: 'team' },
  { table: 'factory_tasks', rows: `team_id = $1`, deletedBy: 'team' },
  { table: 'agent_identities', rows: `team_id = $1`, deletedBy: 'team' },
  { table: 'factories', rows: `team_id = $1`, deletedBy: 'team' },
  {
    table: 'environment_skills',
    rows: `environment_uid IN (SELECT uid FROM environments WHERE team_id = $1)`,
    deletedBy: 'team',
  },
  { table: 'environments', rows: `team_id = $1`, deletedBy: 'team' },
  { table: 'managed_secrets', rows: `team_id = $1`, deletedBy: 'team' },
  { table: 'idempotency_records', rows: TEAM_PRINCIPALS, deletedBy: 'team' },
  // rate-limiter-flexible's counters (services/rate-limits.ts): the team's runs per hour, its keys' requests.
  {
    table: 'rate_limits',
    rows: `key = 'team-runs:' || $1::uuid OR key IN (SELECT 'api-key:' || id FROM api_keys WHERE team_id = $1::uuid)`,
    deletedBy: 'team',
  },
  {
    table: 'api_keys',
    rows: `team_id = $1`,
    deletedBy: 'team',
    deletableNow: `NOT EXISTS (SELECT 1 FROM api_keys older WHERE older.replaced_by = api_keys.id)`,
  },
  { table: 'principals', rows: `team_id = $1`, deletedBy: 'team' },
  { table: 'teams', rows: `id = $1`, deletedBy: 'team' },
];

/**
 * Tables with a team's rows that outlive the team, and why: deleted by their own retention, not
 * by the team's deletion.
 */
export const KEPT_TABLES: Readonly<Record<string, string>> = {
  audit_events: "the record of what was done, the team's deletion too: kept until AUDIT_RETENTION_DAYS",
  audit_chain_heads: "each team's audit chain's newest link, which verifies its events as long as they are kept",
};

/** Tables that hold no team's data, and why. */
export const SHARED_TABLES: Readonly<Record<string, string>> = {
  migrations: "TypeORM's record of the migrations applied",
  worker_leases: "workers' run slots, by workspace queue",
  object_collector: "the object collector's place in its cycle",
  unreferenced_objects:
    'object keys no row names (objects are shared by content: the collector removes what no team names any more)',
};
