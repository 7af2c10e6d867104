/**
 * The contract of the agent-run workflow: its type name, input, signals, queries, search
 * attributes and failure types. The API, the workflow and the worker all import this module;
 * nothing refers to these by string literal elsewhere.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RunState } from '../core/run-state';

export const RUN_WORKFLOW_TYPE = 'agentRunWorkflow';

const RUN_WORKFLOW_ID_PREFIX = 'agent-run-';

export function runWorkflowId(runId: string): string {
  return `${RUN_WORKFLOW_ID_PREFIX}${runId}`;
}

/** The run a workflow id of `runWorkflowId` names; undefined for any other workflow. */
export function runIdOfWorkflowId(workflowId: string): string | undefined {
  return workflowId.startsWith(RUN_WORKFLOW_ID_PREFIX) ? workflowId.slice(RUN_WORKFLOW_ID_PREFIX.length) : undefined;
}

/** Knobs the API passes to every execution; kept small because it lands in history. */
export interface RunWorkflowSettings {
  heartbeatTimeoutSeconds: number;
  /** How long a workspace activity may wait for its worker before the workspace counts as lost. */
  workspaceScheduleToStartSeconds: number;
  modelRetry: { maxAttempts: number; initialIntervalMs: number; maxIntervalMs: number };
  /** A workspace worker whose lease is older than this is dead (absent in executions started before leases). */
  workerLeaseSeconds?: number;
}

export interface RunWorkflowInput {
  runId: string;
  settings: RunWorkflowSettings;
  /** The WORKER_ID the run asked for (`config.worker_host`): its workspace is made only there. */
  workerHost?: string;
  /** Set when an execution continues-as-new in the middle of a turn (the turn is read back from the run). */
  resume?: { turn: number; step: number };
  /** The task queue of the worker holding the run's workspace, carried across continue-as-new. */
  workspaceQueue?: string;
  /** Which provisioning made that workspace, so that removing an abandoned one never hits a newer one. */
  workspaceId?: string;
  /** The run that dispatched this one: told (`childRunEndedSignal`) each time this run's turn ends. */
  parentRunId?: string;
}

/** The queue provisioning activities go to: only workers with room for another run poll it. */
export function provisioningQueue(taskQueue: string): string {
  return `${taskQueue}/provisioning`;
}

/** The queue of the worker with this WORKER_ID: the activities that touch its workspaces go there. */
export function workspaceQueueFor(taskQueue: string, workerId: string): string {
  return `${taskQueue}/workspaces@${workerId}`;
}

/** A follow-up was durably recorded in PostgreSQL with this sequence number. */
export interface FollowupSignal {
  seq: number;
}

export const followupSignal = defineSignal<[FollowupSignal]>('followup');

/**
 * Stop the turn the run is working on (its model call or tool call in flight) without ending the
 * run: the turn ends SUCCEEDED, saying it was interrupted, and the run takes the next follow-up.
 * Ignored when no turn is being worked on.
 */
export const interruptSignal = defineSignal('interrupt');

/** The status message of a turn ended by `interruptSignal`. */
export const INTERRUPTED_MESSAGE =
  "Interrupted at the caller's request: the agent stopped this turn; send a follow-up to go on.";

/** A child run's turn ended (it may get follow-ups and run again). */
export interface ChildRunEnded {
  runId: string;
  state: RunState;
}

export const childRunEndedSignal = defineSignal<[ChildRunEnded]>('childRunEnded');

/** Built-in tools of a factory's agents that the workflow carries out, not the step activity. */
export const ORCHESTRATION_TOOLS = ['dispatch_agent', 'wait_for_runs'] as const;
export type OrchestrationToolName = (typeof ORCHESTRATION_TOOLS)[number];

/** A call to an orchestration tool the step reached: the workflow carries it out and records its result. */
export interface OrchestrationCall {
  /** Its position among the step's tool calls. */
  index: number;
  toolCallId: string;
  name: OrchestrationToolName;
  arguments: Record<string, unknown>;
}

/** A call that waits for a person, as the step hands it to the workflow. */
export interface WaitingApproval {
  approvalId: string;
  /** When it is denied as timed out (ISO 8601, by the database's clock). */
  expiresAt: string;
}

/**
 * A call of the run that waited for a person was decided (approved, denied, answered): the run
 * looks at its approval in PostgreSQL. Carries nothing; a lost one costs only the wait until
 * the run's next periodic look.
 */
export const approvalSignal = defineSignal('approvalDecided');

/** What one call of `runAgentStep` ended with. */
export interface AgentStepOutcome {
  done: boolean;
  /** The turn is done and its run delivers pull requests (`config.delivery.pull_request`). */
  deliver?: boolean;
  /**
   * The step's orchestration calls, in order, once its other calls have run: the workflow carries
   * them out, then runs the same step again to finish it.
   */
  orchestration?: OrchestrationCall[];
  /**
   * A call of the step waits for a person (the run is BLOCKED): the workflow waits for the
   * decision or the deadline, then runs the same step again, which finds it.
   */
  approval?: WaitingApproval;
  /**
   * The stored run has moved past this step's turn (it ended, or a follow-up reopened the run):
   * the step did nothing, and the workflow starts the run's turn anew from what is stored.
   */
  turnEnded?: boolean;
}

/**
 * A slot of the run's team may have freed (a run of the team ended, or one was admitted with
 * slots to spare): a run waiting for admission looks again. Carries nothing; a lost one costs
 * only the wait until the run's next periodic look.
 */
export const admissionSignal = defineSignal('admissionMayHaveFreed');

export const runStateQuery = defineQuery<RunState | 'STARTING'>('runState');

export const searchAttributes = {
  state: defineSearchAttributeKey('AgentRunState', SearchAttributeType.KEYWORD),
  name: defineSearchAttributeKey('AgentName', SearchAttributeType.KEYWORD),
  model: defineSearchAttributeKey('AgentModel', SearchAttributeType.KEYWORD),
  creator: defineSearchAttributeKey('AgentCreator', SearchAttributeType.KEYWORD),
  source: defineSearchAttributeKey('AgentSource', SearchAttributeType.KEYWORD),
  environment: defineSearchAttributeKey('AgentEnvironment', SearchAttributeType.KEYWORD),
  /** On a schedule, its firings and the runs they created. */
  schedule: defineSearchAttributeKey('AgentScheduleId', SearchAttributeType.KEYWORD),
} as const;

export const SEARCH_ATTRIBUTE_KEYS = Object.values(searchAttributes);

/**
 * `ApplicationFailure` types raised by activities. User-side failures end the run FAILED with
 * the error code the failure names; anything else that escapes retries ends it ERROR.
 */
export const RunFailureType = {
  /** The request or the agent's work is at fault; details carry the error code. */
  USER_FAILURE: 'AgentRunUserFailure',
  /** The run row does not exist: the API's transaction that started the workflow rolled back. */
  RUN_NOT_FOUND: 'AgentRunNotFound',
  /** The worker that holds the run's workspace is not the one that got the task (or lost it). */
  WORKSPACE_LOST: 'AgentRunWorkspaceLost',
} as const;

export interface UserFailureDetails {
  errorCode:
    | 'feature_not_available'
    | 'invalid_request'
    | 'environment_setup_failed'
    | 'resource_not_found'
    | 'not_authorized'
    | 'authentication_required'
    | 'budget_exceeded'
    | 'pull_request_no_credential'
    | 'pull_request_owner_not_allowed'
    | 'pull_request_branch_protected'
    | 'pull_request_conflict'
    | 'pull_request_rejected'
    | 'pull_request_forge_unavailable';
  /** The run's files are given up with the turn: they reached the run's disk limit, a follow-up starts afresh. */
  releaseWorkspace?: boolean;
}

/** The run workflow's signature, for those that start it by its type name (the API, schedules). */
export type AgentRunWorkflow = (input: RunWorkflowInput) => Promise<void>;
