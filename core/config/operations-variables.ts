import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { group, intFrom, optionalString, optionalUrl } from './variable';

/** A whole number of days from 1 to 100 years, or unset. */
const optionalDays = optionalString.pipe(
  z
    .string()
    .regex(/^\d{1,5}$/, 'must be a whole number of days from 1 to 36500')
    .transform(Number)
    .refine((days) => days >= 1 && days <= 36_500, 'must be a whole number of days from 1 to 36500')
    .optional(),
);

/** How workers share the runs: their names, capacity, leases and housekeeping. */
export const workers = group('Workers', {
  WORKER_ID: {
    schema: optionalString.pipe(
      z
        .string()
        .regex(/^[A-Za-z0-9._@-]{1,100}$/, 'must be 1-100 of [A-Za-z0-9._@-]')
        .optional(),
    ),
    description:
      "names the worker's workspace queue (1-100 of `A-Za-z0-9._@-`); keep it stable across restarts on the same volume",
    readBy: ['workers'],
    unset: '`<hostname>-<hash of workspace dir>`',
  },
  WORKER_MAX_CONCURRENT_RUNS: {
    schema: intFrom(50, 1, 10_000),
    description:
      'runs one worker works on at once (provisioning or a step in flight); provisioning waits for a worker with room',
    readBy: ['workers'],
  },
  WORKER_LEASE_SECONDS: {
    schema: intFrom(60, 5, 3600),
    description: 'a worker that has not renewed its lease for this long is dead and its runs provision elsewhere',
    readBy: ['API', 'workers'],
  },
  WORKER_DRAIN_SECONDS: {
    schema: intFrom(300, 0, 86_400),
    description:
      "on SIGTERM a worker takes no new work, lets the steps in flight finish for up to this long, then stops; its runs' next steps go on at once on other workers, from their checkpoints (give the orchestrator's grace period, e.g. terminationGracePeriodSeconds, 30 s more)",
    readBy: ['workers'],
  },
  WORKER_WORKFLOW_BUNDLE: {
    schema: optionalString.pipe(
      z
        .string()
        .refine((file) => path.isAbsolute(file) && existsSync(file), 'must be the absolute path of an existing file')
        .optional(),
    ),
    description:
      'a workflow bundle made beforehand (`bundleWorkflowCode` of `workflows/`); a built worker uses `dist/workflow-bundle.js` (`npm run build`), one run from source bundles the workflows at start, a few seconds of CPU each time',
    readBy: ['workers'],
    unset: "the build's bundle, else bundled at start",
  },
  WORKSPACE_SWEEP_INTERVAL_SECONDS: {
    schema: intFrom(300, 1, 86_400),
    description: 'how often a worker removes the workspaces on its disk that nothing will use again, and once at start',
    readBy: ['workers'],
  },
  WORKSPACE_SCHEDULE_TO_START_SECONDS: {
    schema: intFrom(60, 1, 3600),
    description: "how long a task waits for the worker holding its workspace before the run checks that worker's lease",
    readBy: ['API', 'workers'],
  },
  ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: {
    schema: intFrom(10, 1, 600),
    description: 'how soon a step whose worker died is noticed and retried',
    readBy: ['API', 'workers'],
  },
});

/** Delivery of webhooks by the workers. */
export const webhooks = group('Webhooks', {
  WEBHOOK_TIMEOUT_SECONDS: {
    schema: intFrom(10, 1, 300),
    description: 'timeout of one webhook delivery attempt',
    readBy: ['workers'],
  },
  WEBHOOK_RETRY_INITIAL_INTERVAL_MS: {
    schema: intFrom(1000, 1, 3_600_000),
    description: "wait before a failed delivery's first retry; it doubles at each retry",
    readBy: ['workers'],
  },
  WEBHOOK_RETRY_MAX_INTERVAL_MS: {
    schema: intFrom(3_600_000, 1, 86_400_000),
    description: 'longest wait between two attempts of a delivery, never below the first one',
    readBy: ['workers'],
  },
  WEBHOOK_RETRY_WINDOW_SECONDS: {
    schema: intFrom(86_400, 1, 30 * 86_400),
    description: 'how long a delivery is retried before it is given up',
    readBy: ['workers'],
  },
  WEBHOOK_LOG_RETENTION_DAYS: {
    schema: intFrom(30, 1, 3650),
    description: 'finished deliveries older than this leave the delivery log',
    readBy: ['workers'],
  },
  FORGE_WEBHOOK_SECRETS: {
    schema: optionalString,
    description:
      "comma-separated `host=secret` pairs (host with its port where there is one, as GIT_FORGES names it): the secret each forge signs its pull request webhooks to `POST /api/v1/forge-webhooks/{github|gitlab|gitea}` with (GitHub's and Gitea's HMAC key, GitLab's token); a host listed here is not polled",
    readBy: ['API', 'workers'],
    unset: 'unset: no forge webhooks are accepted, every pull request is polled',
  },
  PULL_REQUEST_POLL_STALE_MINUTES: {
    schema: intFrom(30, 1, 7 * 24 * 60),
    description:
      'the hourly maintenance asks the forge for the status of open and draft pull requests on hosts without a FORGE_WEBHOOK_SECRETS entry when it was last checked longer ago than this (with GIT_TOKEN as the credential)',
    readBy: ['workers'],
  },
});

/** Limits per key, client and team; counted in PostgreSQL (event streams: per API process). */
export const quotas = group('Rate limits and quotas', {
  RATE_LIMIT_REQUESTS_PER_MINUTE: {
    schema: intFrom(600, 0, 1_000_000),
    description: 'requests one API key may make per minute, 0 = off',
    readBy: ['API'],
  },
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: {
    schema: intFrom(300, 0, 1_000_000),
    description: 'requests without a valid key one client address may make per minute, per API process, 0 = off',
    readBy: ['API'],
  },
  RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE: {
    schema: intFrom(30, 0, 1_000_000),
    description:
      '`POST /factory-files/validate` requests (open, no key) one client address may make per minute, per API process, besides RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE, 0 = off',
    readBy: ['API'],
  },
  SSE_MAX_STREAMS: {
    schema: intFrom(1000, 1, 1_000_000),
    description: 'event streams one API process serves at once, in all; past it 429 with `Retry-After`',
    readBy: ['API'],
  },
  SSE_MAX_STREAMS_PER_CLIENT: {
    schema: intFrom(20, 1, 1_000_000),
    description: 'event streams one API process serves at once to one client address; past it 429 with `Retry-After`',
    readBy: ['API'],
  },
  SSE_MAX_STREAMS_PER_RUN: {
    schema: intFrom(100, 1, 1_000_000),
    description: 'event streams one API process serves at once of one run; past it 429 with `Retry-After`',
    readBy: ['API'],
  },
  TEAM_MAX_RUNS_PER_HOUR: {
    schema: intFrom(1000, 0, 10_000_000),
    description: 'runs one team may create per hour, schedule firings and factory dispatches included; 0 = off',
    readBy: ['API', 'workers'],
  },
  TEAM_MAX_CONCURRENT_RUNS: {
    schema: intFrom(100, 0, 1_000_000),
    description: 'runs of one team under way at once, 0 = off; more wait `QUEUED` for a slot',
    readBy: ['workers'],
  },
  TEAM_MAX_SCHEDULES: {
    schema: intFrom(100, 0, 1_000_000),
    description: 'schedules one team may have, 0 = no cap; past it a create is 409 `conflict`',
    readBy: ['API'],
  },
  TEAM_MAX_WEBHOOKS: {
    schema: intFrom(20, 0, 1_000_000),
    description: 'webhooks one team may have, 0 = no cap; past it a create is 409 `conflict`',
    readBy: ['API'],
  },
  TEAM_MAX_SECRETS: {
    schema: intFrom(100, 0, 1_000_000),
    description: 'managed secrets one team may have, 0 = no cap; past it a create is 409 `conflict`',
    readBy: ['API'],
  },
  TEAM_MAX_AGENTS: {
    schema: intFrom(500, 0, 1_000_000),
    description:
      'agents one team may have, 0 = no cap; past it a create is 409 `conflict` and `npm run keys -- create --kind agent --name` makes no new agent',
    readBy: ['API'],
  },
  TEAM_MAX_STORED_BYTES: {
    schema: intFrom(100 * 1024 ** 3, 0, Number.MAX_SAFE_INTEGER),
    description:
      "bytes of runs' files one team may keep in the object store (checkpoints, artifacts, attachments, handoff patches, CLIs' logs: what each stored anew), 0 = no cap; past it new runs and forks are refused (400 `budget_exceeded`) and runs take no more checkpoints",
    readBy: ['API', 'workers'],
  },
  OBJECT_STORE_GRACE_SECONDS: {
    schema: intFrom(86_400, 60, 30 * 86_400),
    description:
      'an object of the store that no row names is deleted once two collections this far apart found it so (hourly maintenance)',
    readBy: ['workers'],
  },
  RUN_RETENTION_DAYS: {
    schema: optionalDays,
    description:
      "ended runs (with their descendants) that ended more than this many days ago are deleted with everything they left, in batches, by the hourly maintenance; `npm start`'s Temporal dev server keeps closed workflows' histories as long, and any other namespace's retention should be no longer (docs/operations.md, Data lifecycle)",
    readBy: ['workers', 'npm start'],
    unset: 'unset: runs are kept until deleted (`DELETE /agent/runs/{runId}`)',
  },
  AUDIT_RETENTION_DAYS: {
    schema: optionalDays,
    description:
      "audit events older than this many days are deleted, oldest first, by the hourly maintenance; each team's chain still verifies from the first event kept (`npm run audit -- verify`)",
    readBy: ['workers'],
    unset: 'unset: audit events are kept for ever',
  },
  AUDIT_OPERATOR: {
    schema: optionalString.pipe(
      z
        .string()
        .regex(/^[\x21-\x7e]{1,100}$/, 'must be 1 to 100 printable ASCII characters without spaces')
        .optional(),
    ),
    description:
      'who the operator commands (`npm run keys`, `npm run teams`, `npm run secrets`) record as the actor of what they change in the audit log',
    readBy: ['operator commands'],
    unset: 'unset: `<OS user>@<host name>`',
  },
  TEAM_MAX_ENVIRONMENTS: {
    schema: intFrom(200, 0, 1_000_000),
    description: 'environments one team may have, 0 = no cap; past it a create is 409 `conflict`',
    readBy: ['API'],
  },
});

/** Prometheus metrics and OpenTelemetry tracing. */
export const telemetry = group('Metrics and tracing', {
  METRICS_BEARER_TOKEN: {
    schema: optionalString,
    description:
      '`GET /metrics` of the API and the workers requires `Authorization: Bearer <it>`; required when `HOST` is not loopback (the API, `npm start` and a worker with a metrics server refuse to start without it)',
    readBy: ['API', 'workers'],
    unset: 'unset: open, on a loopback `HOST` only',
  },
  WORKER_METRICS_PORT: {
    schema: intFrom(9464, 0, 65535),
    description: "port of a worker's `/metrics` on `HOST`, with the Temporal SDK's metrics; `0`: none",
    readBy: ['workers'],
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    schema: optionalUrl,
    description: 'base URL of an OTLP/HTTP collector; spans go to `{…}/v1/traces`',
    readBy: ['API', 'workers'],
    unset: 'unset: tracing off',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    schema: optionalUrl,
    description: 'full URL for spans, instead of `{OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`',
    readBy: ['API', 'workers'],
    unset: 'unset',
  },
  OTEL_EXPORTER_OTLP_HEADERS: {
    schema: optionalString,
    description:
      'headers sent with every export, `key=value` pairs separated by commas, values URL-encoded, e.g. `api-key=abc123`; checked only when tracing is on',
    readBy: ['API', 'workers'],
    unset: 'unset',
  },
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: {
    schema: optionalString,
    description:
      "headers added to `OTEL_EXPORTER_OTLP_HEADERS` for span exports, in the same form; a key in both takes this one's value",
    readBy: ['API', 'workers'],
    unset: 'unset',
  },
  OTEL_SERVICE_NAME: {
    schema: optionalString,
    description: '`service.name` of the spans',
    readBy: ['API', 'workers', 'npm start'],
    unset: '`agent-runs-api`, `agent-runs-worker`, `agent-runs` (`npm start`)',
  },
  OTEL_SDK_DISABLED: {
    schema: z.enum(['true', 'false']).default('false'),
    description: '`true` turns tracing off even with an endpoint set',
    readBy: ['API', 'workers'],
  },
});
