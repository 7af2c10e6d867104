import type { EntityManager } from 'typeorm';
import type { RunState } from '../core/run-state';

/** What the service keeps of a CLI harness's work on a run (table run_harness_state). */
export interface HarnessState {
  harness: string;
  /** The CLI's session (Claude Code, Gemini CLI) or thread (Codex) to resume. */
  sessionId: string | null;
  /** `sessionId` is the fork source's as of its checkpoint, not yet continued by this run's CLI. */
  sessionInherited: boolean;
  promptedThrough: string;
  startedStep: string | null;
  finishedStep: string | null;
  /** How many times `startedStep` was started: 1 for its first invocation, 2 for its first resume. */
  stepAttempt: number;
  /** The CLI's own cumulative counters (sums over its invocations), in its native categories. */
  usage: Record<string, number> | null;
  toolCalls: Record<string, number> | null;
  costUsd: number | null;
  captureSequence: number;
  executionId: number;
  capturedAt: Date | null;
}

export function toState(row: Record<string, unknown>): HarnessState {
  return {
    harness: row.harness as string,
    sessionId: (row.session_id as string | null) ?? null,
    sessionInherited: row.session_inherited === true,
    promptedThrough: String(row.prompted_through),
    startedStep: (row.started_step as string | null) ?? null,
    finishedStep: (row.finished_step as string | null) ?? null,
    stepAttempt: Number(row.step_attempt ?? 0),
    usage: (row.usage as Record<string, number> | null) ?? null,
    toolCalls: (row.tool_calls as Record<string, number> | null) ?? null,
    costUsd: row.cost_usd === null || row.cost_usd === undefined ? null : Number(row.cost_usd),
    captureSequence: Number(row.capture_sequence),
    executionId: Number(row.execution_id),
    capturedAt: (row.captured_at as Date | null) ?? null,
  };
}

export async function loadHarnessState(manager: EntityManager, runId: string): Promise<HarnessState | null> {
  const rows = (await manager.query(`SELECT * FROM run_harness_state WHERE run_id = $1`, [runId])) as Record<
    string,
    unknown
  >[];
  return rows[0] ? toState(rows[0]) : null;
}

/** What the model gateway asks before forwarding a call of the run. */
export async function loadGatewayAdmission(
  manager: EntityManager,
  runId: string,
): Promise<{ state: RunState; totalTokens: number } | undefined> {
  const [row] = (await manager.query(`SELECT state, total_tokens FROM runs WHERE run_id = $1`, [runId])) as {
    state: RunState;
    total_tokens: string;
  }[];
  return row ? { state: row.state, totalTokens: Number(row.total_tokens) } : undefined;
}
