import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { Config } from '../core/config';

/**
 * The process's OpenTelemetry tracing, when OTEL_EXPORTER_OTLP_ENDPOINT turns it on: the global
 * tracer provider (so that `@opentelemetry/api` callers and Temporal's interceptors record
 * spans), batched OTLP/HTTP export, and what Temporal's client and worker need to carry the
 * trace through workflows and activities.
 */
export interface Tracing {
  /** Interceptors of a Temporal client: starts and signals carry the caller's trace. */
  clientInterceptors(): WorkflowClientInterceptor[];
  /** Activity interceptors: each activity runs in a span, a child of the workflow's. */
  activityInterceptors(): ActivityInterceptorsFactory[];
  /** The sink through which workflow code (in its sandbox) hands over its finished spans. */
  workflowSpanSink(): InjectedSinks<OpenTelemetrySinks>['exporter'];
  /** Exports every finished span now. */
  flush(): Promise<void>;
  /** Exports what is left and unregisters the provider (tests install tracing again per context). */
  shutdown(): Promise<void>;
}

/**
 * Starts tracing when the configuration has an OTLP endpoint; undefined (and nothing installed,
 * so `@opentelemetry/api` stays a no-op) otherwise. One at a time per process.
 */
export function startTracing(config: Pick<Config, 'tracing'>, defaultServiceName: string): Tracing | undefined {
  const settings = config.tracing;
  if (!settings) return undefined;
  const resource = Resource.default()
    .merge(envDetectorSync.detect())
    .merge(new Resource({ [ATTR_SERVICE_NAME]: settings.serviceName ?? defaultServiceName }));
  const processor: SpanProcessor = new BatchSpanProcessor(
    new OTLPTraceExporter({ url: settings.tracesUrl, headers: settings.headers }),
  );
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // The AsyncLocalStorage context manager and W3C trace context propagation.
  provider.register();
  let stopped: Promise<void> | undefined;
  return {
    clientInterceptors: () => [new OpenTelemetryWorkflowClientInterceptor()],
    activityInterceptors: () => [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    workflowSpanSink: () => workflowSpanSink(makeWorkflowExporter(processor, resource)),
    flush: () => provider.forceFlush(),
    shutdown() {
      stopped ??= provider.shutdown().finally(() => {
        trace.disable();
        context.disable();
        propagation.disable();
      });
      return stopped;
    },
  };
}

/**
 * Temporal's exporter copies the whole WorkflowInfo onto every workflow span: memo (a run's
 * title is the start of its prompt), search attributes and more. Only these go through.
 */
function workflowSpanSink(
  exporter: InjectedSinks<OpenTelemetrySinks>['exporter'],
): InjectedSinks<OpenTelemetrySinks>['exporter'] {
  return {
    export: {
      ...exporter.export,
      fn: (info, spans) => {
        const { workflowId, runId, workflowType, taskQueue, namespace, attempt } = info;
        const safe = { workflowId, runId, workflowType, taskQueue, namespace, attempt } as WorkflowInfo;
        return exporter.export.fn(safe, spans);
      },
    },
  };
}

/**
 * The sinks every worker injects. Workflow code records spans only for workflows started
 * within a trace (workflows/tracing-interceptors.ts); with tracing off here, a traced start
 * from a caller that has it on is dropped quietly rather than logged as an unknown sink.
 */
export function workflowTracingSinks(tracing: Tracing | undefined): InjectedSinks<OpenTelemetrySinks> {
  return { exporter: tracing?.workflowSpanSink() ?? { export: { fn: () => undefined } } };
}
