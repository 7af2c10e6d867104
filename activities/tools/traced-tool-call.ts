import { withSpan } from '../../core/spans';

/**
 * Runs one tool call in an `execute_tool <name>` span with its outcome (`success`, `error`
 * when the tool reported one, or `error.type` when it threw). Never its arguments or output:
 * they may carry secrets.
 */
export function traceToolCall<T extends { isError: boolean }>(
  tool: string,
  kind: 'builtin' | 'mcp',
  call: () => Promise<T>,
): Promise<T> {
  return withSpan(
    `execute_tool ${tool}`,
    { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool, 'agent_runs.tool.kind': kind },
    async (span) => {
      const outcome = await call();
      span.setAttribute('agent_runs.tool.outcome', outcome.isError ? 'error' : 'success');
      return outcome;
    },
  );
}
