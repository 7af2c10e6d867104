import { temporal } from '@temporalio/proto';
import { runWorkflowId } from '../../workflows/run-contract';
import type { TestContext } from './test-context';

const { EventType } = temporal.api.enums.v1;

/**
 * Every activity of a run's workflow, in every execution of it (continue-as-new starts another),
 * as `name#attempt` with how its last attempt ended and why an earlier one failed: what a test
 * shows when a step ran more often than it should have.
 */
export async function activityAttempts(ctx: TestContext, runId: string): Promise<string[]> {
  const workflowId = runWorkflowId(runId);
  const lines: string[] = [];
  for await (const execution of ctx.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await ctx.client.workflow.getHandle(workflowId, execution.runId).fetchHistory();
    const names = new Map<string, string>();
    for (const e of history.events ?? []) {
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled) names.set(String(e.eventId), scheduled.activityType?.name ?? '?');
      const started = e.activityTaskStartedEventAttributes;
      if (started && (started.attempt ?? 1) > 1) {
        lines.push(
          `${names.get(String(started.scheduledEventId))}#${started.attempt} after: ${started.lastFailure?.message}`,
        );
      }
      const ended =
        e.activityTaskFailedEventAttributes ??
        e.activityTaskTimedOutEventAttributes ??
        e.activityTaskCanceledEventAttributes;
      if (ended) {
        const failure = e.activityTaskFailedEventAttributes?.failure ?? e.activityTaskTimedOutEventAttributes?.failure;
        lines.push(
          `${names.get(String(ended.scheduledEventId))} ${EventType[e.eventType as number]}: ${failure?.message ?? ''}`,
        );
      }
    }
    lines.push(`execution ${execution.runId}: ${history.events?.length ?? 0} events`);
  }
  return lines;
}
