import { SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

/**
 * Runs `fn` in a span, a child of the active one (an activity's, a request's). A failure sets
 * the error status and `error.type` (the error's class), never its message: messages can quote
 * a model's or a tool's untrusted output, or a secret. With tracing off this is the no-op API.
 */
export async function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  // Looked up per call: a test installs and removes tracing more than once in a process.
  return trace.getTracer('agent-runs').startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
      throw err;
    } finally {
      span.end();
    }
  });
}
