import { z } from 'zod';
import { group, intFrom, optionalString, optionalUrl } from './variable';

/** Where the service listens, what it logs, where it keeps its data, and its HTTP behaviour. */
export const service = group('Service', {
  PORT: {
    schema: intFrom(8080, 0, 65535),
    description: 'port the API listens on',
    readBy: ['API', 'workers'],
  },
  HOST: {
    schema: z.string().default('127.0.0.1'),
    description: "address the API (and a worker's metrics server) binds to; `0.0.0.0` in containers",
    readBy: ['API', 'workers'],
  },
  TRUST_PROXY_HOPS: {
    schema: intFrom(0, 0, 10),
    description:
      "reverse proxies in front of the API whose `X-Forwarded-For` entries are trusted for the client's address (rate limits by address, logs); 0: the connection's address",
    readBy: ['API'],
  },
  PUBLIC_URL: {
    schema: optionalUrl,
    description: 'external base URL, used in `session_link` and error `type` URLs',
    readBy: ['API', 'workers'],
    unset: '`http://localhost:{PORT}`',
  },
  ERROR_REFERENCE_BASE_URL: {
    schema: optionalUrl,
    description: 'base of the error `type` URLs',
    readBy: ['API'],
    unset: '`{PUBLIC_URL}/errors`',
  },
  LOG_LEVEL: {
    schema: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
    description: '`debug`, `info`, `warn` or `error`',
    readBy: ['API', 'workers'],
  },
  LOG_FORMAT: {
    schema: z.enum(['json', 'pretty']).optional(),
    description: '`json`: one JSON object per line; `pretty`: one readable line per entry',
    readBy: ['API', 'workers', 'npm start'],
    unset: '`npm start` on a terminal: `pretty`; otherwise `json`',
  },
  AGENT_RUNS_DATA_DIR: {
    schema: z.string().default('./.data'),
    description:
      'data of the embedded PostgreSQL and Temporal dev server; also where `secrets.key` and the workspaces are by default',
    readBy: ['API', 'workers', 'npm start'],
  },
  SECRETS_ENCRYPTION_KEY: {
    schema: optionalString,
    description:
      "32 random bytes, base64 or hex (`openssl rand -base64 32`), that encrypt stored credentials (MCP `env` and `headers` values, webhook and managed secrets) and sign download and session links; the same for the API and every worker. Its key id is `fp-` and 12 hex digits derived from it; beside SECRETS_ENCRYPTION_KEYS it must be one of that ring's keys",
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset: SECRETS_ENCRYPTION_KEYS, else `{AGENT_RUNS_DATA_DIR}/secrets.key`, which `npm start` creates',
  },
  SECRETS_ENCRYPTION_KEYS: {
    schema: optionalString,
    description:
      'the keys of a rotation, in place of SECRETS_ENCRYPTION_KEY: `<id>=<key>` entries, newest first, comma-separated (`2026-12=<key>,2026-06=<key>`; ids of 1-32 letters, digits, `_` or `-`); the newest encrypts and signs, every one decrypts and verifies; the same for the API and every worker; how to rotate: docs/operations.md, \"The secrets key\"',
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset: SECRETS_ENCRYPTION_KEY alone',
  },
  RECONCILE_INTERVAL_SECONDS: {
    schema: intFrom(20, 1, 3600),
    description: 'how often the API looks for runs whose workflow closed without finishing them',
    readBy: ['API'],
  },
  RESTORE_MODE: {
    schema: z.enum(['true', 'false']).default('false'),
    description:
      "`true` after restoring PostgreSQL from a backup, until `npm run restore -- check` finds it agrees with Temporal: nothing that deletes or settles on the database's word runs (the reconciler, the workspace sweep, run retention, the object collector, schedules' firings), and new runs, forks and follow-ups are refused with 503 `resource_unavailable` (docs/operations.md, Backup and restore)",
    readBy: ['API', 'workers'],
  },
  DOWNLOAD_URL_TTL_SECONDS: {
    schema: intFrom(3600, 1, 7 * 24 * 3600),
    description: 'how long a signed download URL of an artifact or handoff file works',
    readBy: ['API'],
  },
  SESSION_LINK_TTL_SECONDS: {
    schema: intFrom(86400, 60, 30 * 24 * 3600),
    description:
      "how long a run's `session_link` (its transcript page) works without a key, from the read of the run (or the change a webhook reports) that gave it; reading the run again gives a fresh one",
    readBy: ['API', 'workers'],
  },
  SSE_HEARTBEAT_SECONDS: {
    schema: intFrom(15, 1, 3600),
    description:
      'seconds between the `: ping` comments of an event stream; a client that takes nothing for two of them while data waits is dropped',
    readBy: ['API'],
  },
});

/** PostgreSQL: an external one, or the one `npm start` embeds. */
export const database = group('Database', {
  DATABASE_URL: {
    schema: optionalString,
    description: 'PostgreSQL connection URL',
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset: embedded PostgreSQL',
  },
  EMBEDDED_POSTGRES_PORT: {
    schema: intFrom(54329, 1, 65535),
    description: 'port of the embedded PostgreSQL, used when `DATABASE_URL` is unset',
    readBy: ['API', 'workers', 'npm start'],
  },
  DATABASE_QUERY_TIMEOUT_SECONDS: {
    schema: intFrom(10, 1, 3600),
    description:
      'most a database query may take: the server cancels the statement a little before (`statement_timeout`: 1 s less, or a quarter less below 4 s), the client gives up at this; connecting is bounded to 5 s',
    readBy: ['API', 'workers'],
  },
});

/** Temporal: an external frontend, or the dev server `npm start` runs. */
export const temporal = group('Temporal', {
  TEMPORAL_ADDRESS: {
    schema: optionalString,
    description: "`host:port` of the Temporal frontend (overrides the profile's `address`)",
    readBy: ['API', 'workers', 'npm start'],
    unset: "unset: the profile's, else the Temporal dev server",
  },
  TEMPORAL_NAMESPACE: {
    schema: optionalString,
    description: "namespace of the run workflows (overrides the profile's `namespace`)",
    readBy: ['API', 'workers', 'npm start'],
    unset: "the profile's, else `default`",
  },
  TEMPORAL_API_KEY: {
    schema: optionalString,
    description:
      'API key sent to Temporal as a bearer token on every call (Temporal Cloud, a proxy that wants one); turns TLS on',
    readBy: ['API', 'workers', 'npm start'],
    unset: "the profile's `api_key`, else none",
  },
  TEMPORAL_TLS: {
    schema: z.enum(['true', 'false', '1', '0']).optional(),
    description: 'TLS to Temporal on (`true`) or off (`false`); any `TEMPORAL_TLS_*` file or an API key turns it on',
    readBy: ['API', 'workers', 'npm start'],
    unset: "the profile's, else off unless a TLS setting or API key is given",
  },
  TEMPORAL_TLS_CLIENT_CERT_PATH: {
    schema: optionalString,
    description:
      'PEM client certificate for mTLS to Temporal (with `TEMPORAL_TLS_CLIENT_KEY_PATH`); `_DATA` gives the PEM itself',
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset',
  },
  TEMPORAL_TLS_CLIENT_CERT_DATA: {
    schema: optionalString,
    description: 'the client certificate as PEM text, instead of `TEMPORAL_TLS_CLIENT_CERT_PATH`',
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset',
  },
  TEMPORAL_TLS_CLIENT_KEY_PATH: {
    schema: optionalString,
    description: 'PEM private key of the client certificate; checked against it at start',
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset',
  },
  TEMPORAL_TLS_CLIENT_KEY_DATA: {
    schema: optionalString,
    description: 'the private key as PEM text, instead of `TEMPORAL_TLS_CLIENT_KEY_PATH`',
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset',
  },
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: {
    schema: optionalString,
    description: "PEM CA certificate(s) Temporal's server certificate must chain to",
    readBy: ['API', 'workers', 'npm start'],
    unset: "the system's roots",
  },
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: {
    schema: optionalString,
    description: 'the CA certificate(s) as PEM text, instead of `TEMPORAL_TLS_SERVER_CA_CERT_PATH`',
    readBy: ['API', 'workers', 'npm start'],
    unset: 'unset',
  },
  TEMPORAL_TLS_SERVER_NAME: {
    schema: optionalString,
    description: "name the server certificate must carry (and the TLS SNI), when it is not the address's host",
    readBy: ['API', 'workers', 'npm start'],
    unset: "the address's host",
  },
  TEMPORAL_PROFILE: {
    schema: optionalString,
    description:
      'profile of the Temporal config file to use, as for the `temporal` CLI; the `TEMPORAL_*` variables override its keys',
    readBy: ['API', 'workers', 'npm start'],
    unset: '`default` (none if the file has no such profile)',
  },
  TEMPORAL_CONFIG_FILE: {
    schema: optionalString,
    description: 'the Temporal config file (TOML, `[profile.<name>]` tables)',
    readBy: ['API', 'workers', 'npm start'],
    unset: '`~/.config/temporalio/temporal.toml`, if it exists',
  },
  TEMPORAL_TASK_QUEUE: {
    schema: z.string().default('agent-runs'),
    description: 'shared task queue the workers poll; prefix of their workspace queues',
    readBy: ['API', 'workers'],
  },
  TEMPORAL_CLI_PATH: {
    schema: optionalString,
    description: '`temporal` CLI used for the dev server',
    readBy: ['npm start'],
    unset: 'unset: `temporal` on `PATH`, else a cached or downloaded one',
  },
  TEMPORAL_DEV_PORT: {
    schema: intFrom(7233, 1, 65535),
    description: 'port of the Temporal dev server, used when `TEMPORAL_ADDRESS` is unset',
    readBy: ['API', 'workers', 'npm start'],
  },
  TEMPORAL_UI_PORT: {
    schema: intFrom(8233, 1, 65535),
    description: "port of the dev server's Web UI",
    readBy: ['API', 'npm start'],
  },
  TEMPORAL_DEV_HTTP_PORT: {
    schema: intFrom(7243, 1, 65535),
    description: "port of the dev server's HTTP API (unused by the service; the dev server cannot turn it off)",
    readBy: ['npm start'],
  },
  TEMPORAL_DEV_METRICS_PORT: {
    schema: intFrom(7244, 1, 65535),
    description: "port of the dev server's own Prometheus `/metrics` (the dev server cannot turn it off)",
    readBy: ['npm start'],
  },
  TEMPORAL_UI_URL: {
    schema: optionalUrl,
    description:
      'where the landing page (`GET /`) links the Temporal UI; none when `TEMPORAL_ADDRESS` is set without it',
    readBy: ['API'],
    unset: "the embedded UI's",
  },
  TEMPORAL_RPC_TIMEOUT_SECONDS: {
    schema: intFrom(5, 1, 300),
    description:
      "deadline of each call the API makes to Temporal (and a worker's, to start runs, deliveries or schedules); past it an API request answers 503 `resource_unavailable` with `Retry-After` and changes nothing",
    readBy: ['API', 'workers'],
  },
});
