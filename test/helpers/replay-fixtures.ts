import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { runWorkflowId } from '../../workflows/run-contract';
import type { TestContext } from './test-context';

export const HISTORIES_DIR = path.resolve(__dirname, '..', 'replay', 'histories');

/**
 * With RECORD_REPLAY_FIXTURES=1 (`npm run fixtures:record`), writes the histories of every
 * execution of a run's workflow to test/replay/histories/<scenario>-<n>.json, oldest first; the
 * replay test replays them against the current workflow code. Otherwise does nothing.
 */
export async function recordReplayFixture(ctx: TestContext, runId: string, scenario: string): Promise<void> {
  await recordWorkflowReplayFixture(ctx, runWorkflowId(runId), scenario);
}

/** The same for any workflow id (a schedule's firing). */
export async function recordWorkflowReplayFixture(
  ctx: TestContext,
  workflowId: string,
  scenario: string,
): Promise<void> {
  if (process.env.RECORD_REPLAY_FIXTURES !== '1') return;
  const executions: { runId: string; startTime: number }[] = [];
  for await (const execution of ctx.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    executions.push({ runId: execution.runId, startTime: execution.startTime.getTime() });
  }
  executions.sort((a, b) => a.startTime - b.startTime);
  mkdirSync(HISTORIES_DIR, { recursive: true });
  for (const [index, execution] of executions.entries()) {
    const history = await ctx.client.workflow.getHandle(workflowId, execution.runId).fetchHistory();
    writeFileSync(
      path.join(HISTORIES_DIR, `${scenario}-${index + 1}.json`),
      `${JSON.stringify(historyToObject(history))}\n`,
    );
  }
}

const History = temporal.api.history.v1.History;

/** A history as plain JSON (64-bit numbers and enums as strings, bytes as base64). */
export function historyToObject(history: temporal.api.history.v1.IHistory): unknown {
  return History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });
}

export function historyFromObject(json: unknown): temporal.api.history.v1.IHistory {
  return History.fromObject(json as Record<string, unknown>);
}
