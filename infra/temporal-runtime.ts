import { createServer } from 'node:net';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  makeTelemetryFilterString,
  Runtime,
  type ActivityInterceptorsFactory,
  type LogLevel as TemporalLogLevel,
  type LogMetadata,
  type Logger as TemporalLogger,
} from '@temporalio/worker';
import type { Logger, LogFields } from '../core/logger';
import { RunFailureType, runIdOfWorkflowId } from '../workflows/run-contract';
import { ScheduleFailureType } from '../workflows/schedule-contract';
import { WebhookFailureType } from '../workflows/webhook-contract';

export interface TemporalRuntimeOptions {
  /** Receives the SDK's log lines and the Rust core's warnings. */
  logger: Logger;
  /**
   * `host:port` of the SDK's Prometheus exporter (its `temporal_*` metrics); none when unset.
   * A loopback address: the service's own `/metrics` serves what it exports.
   */
  prometheusBindAddress?: string;
}

/**
 * Failures that are outcomes, not faults: the run, schedule or delivery records them where
 * users see them (the run's state change is logged at info), so the SDK's "Activity failed"
 * about them is one debug line without a stack.
 */
const EXPECTED_FAILURE_TYPES = new Set<string>([
  RunFailureType.USER_FAILURE,
  RunFailureType.RUN_NOT_FOUND,
  RunFailureType.WORKSPACE_LOST,
  ScheduleFailureType.SPAWN_REFUSED,
  WebhookFailureType.ATTEMPT_FAILED,
]);

/** SDK lines that describe how this service is built, not something to act on. */
const ROUTINE_MESSAGES = [
  'No workflows registered, not polling for workflow tasks',
  'No activities registered, not polling for activity tasks',
  // Core, when a cancelled activity completes after the workflow moved on.
  'Activity not found on completion',
];

/**
 * Marks an activity's log lines once its cancellation was requested, so that what it throws
 * while it unwinds (an aborted HTTP request, a killed command) is logged as the cancellation it
 * is. Every worker registers it among its activity interceptors (worker/create-worker.ts).
 */
export const markCancelledActivityLogs: ActivityInterceptorsFactory = (ctx) => ({
  outbound: {
    getLogAttributes: (input, next) =>
      next(ctx.cancellationSignal.aborted ? { ...input, cancelRequested: true } : input),
  },
});

function isExpectedFailure(error: unknown, meta: LogMetadata = {}): boolean {
  if (meta.cancelRequested === true) return true;
  if (error instanceof CancelledFailure || (error instanceof Error && error.name === 'AbortError')) return true;
  return error instanceof ApplicationFailure && error.type != null && EXPECTED_FAILURE_TYPES.has(error.type);
}

/** Where a Temporal line goes in our levels; undefined drops it (TRACE dumps whole activations). */
function levelOf(level: TemporalLogLevel, message: string, meta: LogMetadata): keyof Omit<Logger, 'child'> | undefined {
  if (level === 'TRACE') return undefined;
  if (level === 'DEBUG') return 'debug';
  if (ROUTINE_MESSAGES.some((m) => message.startsWith(m))) return 'debug';
  if (level === 'INFO') {
    // Worker state, bundler output, Nexus: chatter. Our own workflow and activity log calls stay.
    return meta.sdkComponent === 'workflow' || meta.sdkComponent === 'activity' ? 'info' : 'debug';
  }
  if (level === 'WARN') return meta.error !== undefined && isExpectedFailure(meta.error, meta) ? 'debug' : 'warn';
  return 'error';
}

/** Metadata on every SDK line that says nothing: opaque, or the same for the whole process. */
const DROPPED_META = new Set(['taskToken', 'namespace', 'isLocal', 'activityId', 'workflowRunId', 'runId']);

/** SDK metadata keys in this service's field names. */
const RENAMED_META: Record<string, string> = {
  sdkComponent: 'sdk_component',
  workflowType: 'workflow_type',
  activityType: 'activity',
  taskQueue: 'task_queue',
  durationMs: 'duration_ms',
  cancelRequested: 'cancel_requested',
};

/** The SDK's metadata in this service's field names, with a run's id where the workflow is a run's. */
function fieldsOf(meta: LogMetadata): LogFields {
  const fields: LogFields = {};
  for (const [key, value] of Object.entries(meta)) {
    if (DROPPED_META.has(key) || value === undefined) continue;
    if (key === 'workflowId' && typeof value === 'string') {
      const runId = runIdOfWorkflowId(value);
      if (runId) fields.run_id = runId;
      else fields.workflow_id = value;
    } else if (key === 'error' && isExpectedFailure(value, meta)) {
      // One line: what failed, not where (a string, which the error serializer leaves alone).
      const type = (value as ApplicationFailure).type ?? (value as Error).constructor?.name ?? 'Error';
      fields.error = `${type}: ${(value as Error).message}`;
    } else {
      fields[RENAMED_META[key] ?? key] = value;
    }
  }
  return fields;
}

/** Temporal's `Logger` on top of ours. */
export class TemporalLogAdapter implements TemporalLogger {
  constructor(private readonly logger: Logger) {}

  log(level: TemporalLogLevel, message: string, meta: LogMetadata = {}): void {
    const target = levelOf(level, message, meta);
    if (target) this.logger[target](message, fieldsOf(meta));
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

let installed = false;

/**
 * Installs the process's Temporal runtime (a per-process singleton, so once: later calls do
 * nothing and return false) with its logs, the Rust core's forwarded too, routed through
 * `logger`, and its metrics to a Prometheus exporter when asked. Call it before the first worker or native connection is made.
 */
export function installTemporalRuntime(options: TemporalRuntimeOptions): boolean {
  if (installed) return false;
  Runtime.install({
    logger: new TemporalLogAdapter(options.logger),
    // Each entry point stops its workers itself: a worker process drains on SIGTERM (worker/main.ts).
    shutdownSignals: [],
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }), forward: {} },
      ...(options.prometheusBindAddress
        ? {
            metrics: {
              prometheus: {
                bindAddress: options.prometheusBindAddress,
                countersTotalSuffix: true,
                useSecondsForDurations: true,
              },
            },
          }
        : {}),
    },
  });
  installed = true;
  return true;
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
