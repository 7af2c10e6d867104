import { isTerminal, type RunState } from '../../core/run-state';

/**
 * How a run as PostgreSQL stores it and its workflow as Temporal knows it disagree: the pure
 * rules of `npm run restore -- check` (services/restore/consistency-check.ts gathers both sides).
 */

/** A run's row, with its ages by the database's clock. */
export interface StoredRun {
  state: RunState;
  turn: number;
  /** Seconds since its row last changed. */
  updatedSecondsAgo: number;
  /** Seconds since its latest turn ended; null while one is under way. */
  endedSecondsAgo: number | null;
  /** Its idle window (`config.idle_timeout_minutes`): its workflow waits that long for a follow-up. */
  idleTimeoutMinutes: number;
}

/** The latest execution of a run's workflow. */
export interface RunWorkflow {
  workflowId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, TERMINATED, ... */
  status: string;
  /** Its `AgentRunState` search attribute: the state the workflow last set. */
  state?: string;
  /** Seconds since the execution started. */
  startedSecondsAgo: number;
}

export const DIFFERENCE_KINDS = {
  workflow_missing: {
    means: 'PostgreSQL says the run is under way; Temporal has no workflow for it.',
    action:
      'Restart without restore mode: the reconciler records the run ERROR within a minute, and its creator may send a follow-up to start it again.',
  },
  workflow_closed: {
    means: 'PostgreSQL says the run is under way; its workflow has closed (its run ended after the backup).',
    action:
      'Restart without restore mode: the reconciler records the run ERROR (CANCELLED for a cancelled workflow); the turn the backup lacks is lost, and a follow-up starts the run again.',
  },
  workflow_ahead: {
    means: 'PostgreSQL says the run ended; its workflow is still open on a turn or follow-up the backup does not have.',
    action:
      'Terminate the workflow (`temporal workflow terminate --workflow-id agent-run-<run id> --reason restore`) so that it writes nothing over the restored run; the run stays as the backup has it, and a follow-up starts it again.',
  },
  run_missing: {
    means: 'Temporal has a workflow for a run PostgreSQL does not have (created after the backup).',
    action:
      'Nothing the service can restore: its row, transcript and files are gone. Terminate the workflow if it is open (else the worker removes its workspace at its next sweep), and tell its creator from the workflow (`temporal workflow describe --workflow-id agent-run-<run id>`: its search attributes name the creator and model).',
  },
} as const;

export type DifferenceKind = keyof typeof DIFFERENCE_KINDS;

export interface RunDifference {
  runId: string;
  kind: DifferenceKind;
  workflowId: string;
  /** The run as PostgreSQL has it, in a few words. */
  database: string;
  /** The workflow as Temporal has it, in a few words. */
  temporal: string;
}

/** `agree`; `recent`: changed within the quiet window, not compared (it may be on its way); or how they differ. */
export type Comparison =
  | { outcome: 'agree' }
  | { outcome: 'recent' }
  | { outcome: 'differ'; difference: Omit<RunDifference, 'runId' | 'workflowId'> };

/**
 * How long past its idle window a run's workflow may still be open: the removal of its workspace
 * may wait up to two worker leases for a busy worker, and workers started after the restore
 * catch up on the timers that fired while they were down.
 */
export const LINGER_SECONDS = 600;

const OPEN = new Set(['RUNNING', 'PAUSED']);

/** Whether an execution status is an open one (CONTINUED_AS_NEW is an earlier execution of an open chain). */
export const isOpen = (status: string): boolean => OPEN.has(status);

/**
 * Whether the run's row and its workflow's latest execution disagree. Not compared: a row that
 * changed, or a workflow that started, within `quietSeconds` (the other side may not have
 * caught up yet).
 */
export function compareRun(
  stored: StoredRun | undefined,
  workflow: RunWorkflow | undefined,
  quietSeconds: number,
): Comparison {
  if (stored ? stored.updatedSecondsAgo < quietSeconds : workflow && workflow.startedSecondsAgo < quietSeconds) {
    return { outcome: 'recent' };
  }
  const kind = differenceKind(stored, workflow);
  if (!kind) return { outcome: 'agree' };
  return {
    outcome: 'differ',
    difference: { kind, database: describeRow(stored), temporal: describeWorkflow(workflow) },
  };
}

function differenceKind(stored: StoredRun | undefined, workflow: RunWorkflow | undefined): DifferenceKind | undefined {
  if (!stored) return workflow && !isRolledBackCreate(workflow) ? 'run_missing' : undefined;
  if (!isTerminal(stored.state)) {
    if (!workflow) return 'workflow_missing';
    return isOpen(workflow.status) ? undefined : 'workflow_closed';
  }
  if (!workflow || !isOpen(workflow.status)) return undefined;
  return workflowIsAhead(stored, workflow) ? 'workflow_ahead' : undefined;
}

/**
 * An ended run's open workflow is normal within its idle window, waiting for a follow-up with the
 * state the row has. It is ahead when it works on a turn (or waits to), ended a turn otherwise,
 * or is still open well past the window of the turn the row says ended last.
 */
function workflowIsAhead(stored: StoredRun, workflow: RunWorkflow): boolean {
  if (workflow.state !== undefined && workflow.state !== stored.state) return true;
  const windowSeconds = stored.idleTimeoutMinutes * 60 + LINGER_SECONDS;
  return stored.endedSecondsAgo !== null && stored.endedSecondsAgo > windowSeconds;
}

/**
 * The workflow of a create whose transaction rolled back (its caller was answered 503): it found
 * no run and completed at once, never leaving the state the API started it with.
 */
function isRolledBackCreate(workflow: RunWorkflow): boolean {
  return workflow.status === 'COMPLETED' && (workflow.state === undefined || workflow.state === 'QUEUED');
}

function describeRow(stored: StoredRun | undefined): string {
  if (!stored) return 'no row';
  const ended = stored.endedSecondsAgo === null ? '' : `, ended ${ago(stored.endedSecondsAgo)}`;
  return `${stored.state} (turn ${stored.turn}${ended})`;
}

function describeWorkflow(workflow: RunWorkflow | undefined): string {
  if (!workflow) return 'no workflow';
  return workflow.state === undefined ? workflow.status : `${workflow.status} (${workflow.state})`;
}

/** `42 s ago`, `17 min ago`, `5 h ago`, `3 d ago`. */
export function ago(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}
