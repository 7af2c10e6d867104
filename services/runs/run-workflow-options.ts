import type { SearchAttributePair } from '@temporalio/common';
import type { Config } from '../../core/config';
import type { RunState } from '../../core/run-state';
import type { Run } from '../../db/rows/run';
import { runWorkflowId, searchAttributes, type RunWorkflowInput } from '../../workflows/run-contract';

/** The Temporal UI's one-line summary of a run's workflow: its title (the UI shows a line, not a page). */
const SUMMARY_CHARS = 120;

/**
 * What the run workflow is started with: its id, queue, input, what operators search by, and
 * what the Temporal UI shows of it (its user metadata: the title as the summary, and details
 * with the run's console page; the workflow keeps its current state in its current details).
 */
export function runWorkflowOptions(
  config: Config,
  run: Pick<Run, 'runId' | 'name' | 'modelId' | 'creatorUid' | 'source' | 'environmentId' | 'title' | 'schedule'> & {
    parentRunId?: string | null;
    config?: Pick<Run['config'], 'worker_host'>;
  },
  state: RunState,
) {
  const input: RunWorkflowInput = {
    runId: run.runId,
    settings: {
      heartbeatTimeoutSeconds: config.heartbeatTimeoutSeconds,
      workspaceScheduleToStartSeconds: config.workspace.scheduleToStartSeconds,
      modelRetry: config.models.retry,
      workerLeaseSeconds: config.worker.leaseSeconds,
    },
    ...(run.config?.worker_host ? { workerHost: run.config.worker_host } : {}),
    ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
  };
  const attributes: SearchAttributePair[] = [
    { key: searchAttributes.state, value: state },
    { key: searchAttributes.model, value: run.modelId },
    { key: searchAttributes.creator, value: run.creatorUid },
    { key: searchAttributes.source, value: run.source },
    { key: searchAttributes.environment, value: run.environmentId ?? 'empty-environment' },
  ];
  if (run.name) attributes.push({ key: searchAttributes.name, value: run.name });
  if (run.schedule) attributes.push({ key: searchAttributes.schedule, value: run.schedule.schedule_id });
  return {
    taskQueue: config.temporal.taskQueue,
    workflowId: runWorkflowId(run.runId),
    args: [input] as [RunWorkflowInput],
    typedSearchAttributes: attributes,
    memo: { title: run.title },
    staticSummary: run.title.length > SUMMARY_CHARS ? `${run.title.slice(0, SUMMARY_CHARS - 1)}…` : run.title,
    staticDetails: [
      `Run ${run.runId} · model ${run.modelId} · source ${run.source}`,
      `Console: ${config.publicUrl}/console/runs/${run.runId}`,
    ].join('\n\n'),
  };
}
