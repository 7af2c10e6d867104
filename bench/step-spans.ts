import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/**
 * Where a step's time goes, from the spans the service records anyway: the model call (`chat …`),
 * each tool call (`execute_tool …`) and the changed-files diff (`record_changed_files`), kept in
 * memory while `recording` is on. The rest of a step is the database and Temporal.
 */
export function recordStepSpans(): { stop(): Map<string, number[]> } {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  return {
    stop() {
      const byName = new Map<string, number[]>();
      for (const span of exporter.getFinishedSpans()) {
        const name = span.name.startsWith('chat ') ? 'chat (model call)' : span.name;
        const [s, ns] = span.duration;
        byName.set(name, [...(byName.get(name) ?? []), s * 1000 + ns / 1e6]);
      }
      // The context manager too: left on, its async hooks would bill every promise after this to
      // the phases that follow (CPU per step).
      trace.disable();
      context.disable();
      void provider.shutdown();
      return byName;
    },
  };
}
