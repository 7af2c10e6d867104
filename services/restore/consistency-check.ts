import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import { runsForCheck, unfinishedRunsForCheck, type RunForCheck } from '../../db/run-consistency-reads';
import { RUN_WORKFLOW_TYPE, runIdOfWorkflowId, runWorkflowId, searchAttributes } from '../../workflows/run-contract';
import { compareRun, isOpen, type RunDifference, type RunWorkflow } from './run-comparison';

export interface ConsistencyCheckDeps {
  dataSource: DataSource;
  temporal: Client;
  /** TEMPORAL_TASK_QUEUE: the run workflows of this deployment are those started on it. */
  taskQueue: string;
  rpcTimeoutMs: number;
}

export interface ConsistencyReport {
  taskQueue: string;
  /** Runs whose row and workflow were compared (unfinished rows, and every run with a workflow listed). */
  runsCompared: number;
  /** Run workflows Temporal lists on the task queue (latest execution each), open or closed within its retention. */
  workflowsListed: number;
  /** Runs left out because their row, or their workflow, changed within the quiet window: check again. */
  notCompared: string[];
  differences: RunDifference[];
}

const PAGE = 200;
const PARALLEL = 10;

/**
 * Compares every run PostgreSQL has under way, and every run workflow Temporal has on the task
 * queue (open, or closed within the namespace's retention), and reports each run on which they
 * disagree (services/restore/run-comparison.ts says how). Changes nothing.
 */
export async function checkConsistency(
  deps: ConsistencyCheckDeps,
  options: { quietSeconds: number },
): Promise<ConsistencyReport> {
  const listed = await listRunWorkflows(deps);
  const report: ConsistencyReport = {
    taskQueue: deps.taskQueue,
    runsCompared: 0,
    workflowsListed: listed.size,
    notCompared: [],
    differences: [],
  };
  const record = async (run: RunForCheck | undefined, runId: string, workflow: RunWorkflow | undefined) => {
    report.runsCompared++;
    const comparison = compareRun(run, workflow, options.quietSeconds);
    if (comparison.outcome === 'recent') report.notCompared.push(runId);
    if (comparison.outcome === 'differ')
      report.differences.push({ runId, workflowId: runWorkflowId(runId), ...comparison.difference });
  };
  const unfinished = new Set<string>();
  for await (const page of unfinishedRunPages(deps.dataSource)) {
    // Described one by one, not taken from the list: a visibility store may lag behind.
    const workflows = await inBatches(page, (run) => describeRunWorkflow(deps, run.runId));
    for (const [i, run] of page.entries()) {
      unfinished.add(run.runId);
      await record(run, run.runId, workflows[i]);
    }
  }
  const others = [...listed.keys()].filter((runId) => !unfinished.has(runId));
  for (let i = 0; i < others.length; i += 1000) {
    const batch = others.slice(i, i + 1000);
    const rows = new Map((await runsForCheck(deps.dataSource.manager, batch)).map((r) => [r.runId, r]));
    for (const runId of batch) {
      const run = rows.get(runId);
      let workflow = listed.get(runId);
      // An open workflow that seems to disagree may have moved on since it was listed: asked again.
      if (workflow && isOpen(workflow.status) && compareRun(run, workflow, options.quietSeconds).outcome === 'differ')
        workflow = await describeRunWorkflow(deps, runId);
      await record(run, runId, workflow);
    }
  }
  return report;
}

async function* unfinishedRunPages(dataSource: DataSource): AsyncGenerator<RunForCheck[]> {
  for (let after = ''; ;) {
    const page = await unfinishedRunsForCheck(dataSource.manager, PAGE, after);
    if (page.length) yield page;
    if (page.length < PAGE) return;
    after = page[page.length - 1]!.runId;
  }
}

/** The latest execution of each run workflow on the task queue, by run id. */
async function listRunWorkflows(deps: ConsistencyCheckDeps): Promise<Map<string, RunWorkflow>> {
  const latest = new Map<string, RunWorkflow>();
  const query = `WorkflowType = '${RUN_WORKFLOW_TYPE}' AND TaskQueue = '${quoted(deps.taskQueue)}'`;
  for await (const execution of deps.temporal.workflow.list({ query })) {
    const runId = runIdOfWorkflowId(execution.workflowId);
    if (!runId || !isUuid(runId)) continue;
    const workflow = workflowOf(execution);
    const seen = latest.get(runId);
    if (!seen || workflow.startedSecondsAgo < seen.startedSecondsAgo) latest.set(runId, workflow);
  }
  return latest;
}

/** The run's workflow's latest execution as Temporal describes it now; undefined when it has none. */
async function describeRunWorkflow(deps: ConsistencyCheckDeps, runId: string): Promise<RunWorkflow | undefined> {
  try {
    const handle = deps.temporal.workflow.getHandle(runWorkflowId(runId));
    return workflowOf(await deps.temporal.withDeadline(Date.now() + deps.rpcTimeoutMs, () => handle.describe()));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

function workflowOf(
  execution: Pick<WorkflowExecutionInfo, 'workflowId' | 'status' | 'typedSearchAttributes' | 'startTime'>,
): RunWorkflow {
  const state = execution.typedSearchAttributes.get(searchAttributes.state);
  return {
    workflowId: execution.workflowId,
    status: execution.status.name,
    ...(state === undefined ? {} : { state }),
    startedSecondsAgo: (Date.now() - execution.startTime.getTime()) / 1000,
  };
}

/** `fn` of each item, a few at a time, in order. */
async function inBatches<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += PARALLEL)
    results.push(...(await Promise.all(items.slice(i, i + PARALLEL).map(fn))));
  return results;
}

/** A value inside a visibility query's single quotes. */
function quoted(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
}
