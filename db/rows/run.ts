import type { RunSource, RunState } from '../../core/run-state';
import type { AgentSkillInfo, ResolvedAgentConfig, RunStatusMessage } from '../../core/run-types';

/** The schedule that created a run, as it was at that moment. */
export interface RunScheduleRef {
  schedule_id: string;
  schedule_name: string;
  cron_schedule: string;
}

export interface Run {
  runId: string;
  teamId: string;
  creatorUid: string;
  creatorType: 'user' | 'service_account';
  creatorDisplayName: string;
  /** The agent identity the run executes as, if any. */
  executorUid: string | null;
  executorDisplayName: string | null;
  title: string;
  prompt: string;
  state: RunState;
  turn: number;
  config: ResolvedAgentConfig;
  name: string | null;
  modelId: string;
  environmentId: string | null;
  skillSpec: string | null;
  source: RunSource;
  /** Set on runs a schedule created (`source` SCHEDULED_AGENT); absent on rows built before schedules. */
  schedule?: RunScheduleRef | null;
  metadata: Record<string, string>;
  conversationId: string;
  parentRunId: string | null;
  /** The top-level run of its orchestration tree; itself for a top-level run. */
  rootRunId: string;
  /** The factory whose agent the run executes as (set when its executor belongs to one). */
  factoryUid?: string | null;
  /** A dispatched child's position in its parent (`t<turn>-s<step>-c<call>`): a retried dispatch finds it. */
  dispatchKey?: string | null;
  sessionId: string;
  statusMessage: RunStatusMessage | null;
  agentSkill: AgentSkillInfo | null;
  totalTokens: string;
  inferenceCostUsd: string | null;
  cancelRequestedAt: Date | null;
  cancelRequestedBy: string | null;
  /** WORKER_ID of the worker that holds (or last held) the run's workspace. */
  workerId?: string | null;
  /** The image its environment named and the digest that resolved to when the run was first provisioned on it. */
  image?: { reference: string; digest: string } | null;
  /** The run and checkpoint a fork started from (`POST /agent/runs/{runId}/fork`). */
  forkedFrom?: { runId: string; checkpointId: string } | null;
  startedAt: Date | null;
  endedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}
