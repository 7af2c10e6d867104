import type { RunState } from '../../core/run-state';
import type { toRunItem } from './run-item';

/** The states the oldest official client knows a task by; ERROR and CANCELLED are failures to it. */
const TASK_STATE: Record<RunState, 'QUEUED' | 'INPROGRESS' | 'SUCCEEDED' | 'FAILED'> = {
  QUEUED: 'QUEUED',
  INPROGRESS: 'INPROGRESS',
  // Waiting for a person is still work in progress to a client that knows no BLOCKED.
  BLOCKED: 'INPROGRESS',
  SUCCEEDED: 'SUCCEEDED',
  FAILED: 'FAILED',
  ERROR: 'FAILED',
  CANCELLED: 'FAILED',
};
const TASK_SOURCES = ['LINEAR', 'API', 'SLACK', 'LOCAL', 'SCHEDULED_AGENT'] as const;
type TaskSource = (typeof TASK_SOURCES)[number];
const isTaskSource = (source: string | undefined): source is TaskSource =>
  (TASK_SOURCES as readonly (string | undefined)[]).includes(source);

/** The run states a task `state` filter of the oldest client stands for. */
export function runStatesOfTaskState(state: string): string[] {
  return state === 'FAILED' ? ['FAILED', 'ERROR', 'CANCELLED'] : [state];
}

/**
 * A run as the oldest official client (`warp-sdk` 0.1.1) reads it: a `TaskItem`, `task_id` for the
 * run id, in its states (an ERROR or CANCELLED run is FAILED, its status message saying which).
 */
export function toTaskItem(run: ReturnType<typeof toRunItem>) {
  const state = run.state as RunState;
  const message =
    run.status_message?.message ?? (state === 'CANCELLED' ? 'Cancelled.' : state === 'ERROR' ? 'Error.' : undefined);
  return {
    task_id: run.run_id,
    title: run.title,
    prompt: run.prompt,
    state: TASK_STATE[state],
    created_at: run.created_at,
    updated_at: run.updated_at,
    agent_config: { ...run.agent_config } as Record<string, unknown>,
    creator: { uid: run.creator.uid, type: run.creator.type },
    ...(run.session_id ? { session_id: run.session_id } : {}),
    ...(run.session_link ? { session_link: run.session_link } : {}),
    ...(isTaskSource(run.source) ? { source: run.source } : {}),
    ...(message !== undefined
      ? { status_message: { message: state === 'ERROR' || state === 'CANCELLED' ? `${state}: ${message}` : message } }
      : {}),
  };
}
