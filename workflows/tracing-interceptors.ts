/**
 * Workflow interceptors of the bundle (not a workflow): Temporal's OpenTelemetry interceptors,
 * applied only to what is traced. A workflow started, signalled or queried with a trace context
 * in its headers (the API's client sets one when tracing is on) gets its spans, and what it
 * schedules within them (activities, child workflows, continue-as-new) carries the trace on;
 * everything else passes straight through, so with tracing off the workflow code runs as it
 * did before, records nothing and replays the same. Whether a call is traced depends only on
 * headers in the history, so replay makes the same choice.
 */
import * as otel from '@opentelemetry/api';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type { Headers } from '@temporalio/common';
import type { WorkflowInboundCallsInterceptor, WorkflowInterceptors } from '@temporalio/workflow';

/** The header in which Temporal's interceptors carry the trace context. */
const TRACE_HEADER = '_tracer-data';

const carriesTrace = (headers: Headers) => headers[TRACE_HEADER] !== undefined;
const withinSpan = () => otel.trace.getSpan(otel.context.active()) !== undefined;

export const interceptors = (): WorkflowInterceptors => {
  // Made on first use: their tracer (and the sandbox's span exporter) only for traced workflows.
  let inbound: OpenTelemetryInboundInterceptor | undefined;
  let outbound: OpenTelemetryOutboundInterceptor | undefined;
  const traced = () => (inbound ??= new OpenTelemetryInboundInterceptor());
  const tracedOut = () => (outbound ??= new OpenTelemetryOutboundInterceptor());
  const inboundCalls: WorkflowInboundCallsInterceptor = {
    execute: (input, next) => (carriesTrace(input.headers) ? traced().execute(input, next) : next(input)),
    handleSignal: (input, next) => (carriesTrace(input.headers) ? traced().handleSignal(input, next) : next(input)),
    handleUpdate: (input, next) => (carriesTrace(input.headers) ? traced().handleUpdate(input, next) : next(input)),
    validateUpdate: (input, next) => (carriesTrace(input.headers) ? traced().validateUpdate(input, next) : next(input)),
    handleQuery: (input, next) => (carriesTrace(input.headers) ? traced().handleQuery(input, next) : next(input)),
  };
  return {
    inbound: [inboundCalls],
    outbound: [
      {
        scheduleActivity: (input, next) => (withinSpan() ? tracedOut().scheduleActivity(input, next) : next(input)),
        scheduleLocalActivity: (input, next) =>
          withinSpan() ? tracedOut().scheduleLocalActivity(input, next) : next(input),
        startChildWorkflowExecution: (input, next) =>
          withinSpan() ? tracedOut().startChildWorkflowExecution(input, next) : next(input),
        continueAsNew: (input, next) => (withinSpan() ? tracedOut().continueAsNew(input, next) : next(input)),
        signalWorkflow: (input, next) => (withinSpan() ? tracedOut().signalWorkflow(input, next) : next(input)),
        getLogAttributes: (input, next) => (withinSpan() ? tracedOut().getLogAttributes(input, next) : next(input)),
      },
    ],
    // Releases the sandbox's context manager when a traced workflow leaves the cache; a no-op otherwise.
    internals: [new OpenTelemetryInternalsInterceptor()],
  };
};
