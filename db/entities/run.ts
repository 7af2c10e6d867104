import { EntitySchema } from 'typeorm';
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
  startedAt: Date | null;
  endedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const RunEntity = new EntitySchema<Run>({
  name: 'Run',
  tableName: 'runs',
  columns: {
    runId: { name: 'run_id', type: 'uuid', primary: true },
    teamId: { name: 'team_id', type: 'uuid' },
    creatorUid: { name: 'creator_uid', type: 'text' },
    creatorType: { name: 'creator_type', type: 'text' },
    creatorDisplayName: { name: 'creator_display_name', type: 'text' },
    executorUid: { name: 'executor_uid', type: 'text', nullable: true },
    executorDisplayName: { name: 'executor_display_name', type: 'text', nullable: true },
    title: { type: 'text' },
    prompt: { type: 'text' },
    state: { type: 'text' },
    turn: { type: 'integer' },
    config: { type: 'jsonb' },
    name: { type: 'text', nullable: true },
    modelId: { name: 'model_id', type: 'text' },
    environmentId: { name: 'environment_id', type: 'text', nullable: true },
    skillSpec: { name: 'skill_spec', type: 'text', nullable: true },
    source: { type: 'text' },
    schedule: { type: 'jsonb', nullable: true },
    metadata: { type: 'jsonb' },
    conversationId: { name: 'conversation_id', type: 'text' },
    parentRunId: { name: 'parent_run_id', type: 'uuid', nullable: true },
    factoryUid: { name: 'factory_uid', type: 'text', nullable: true },
    dispatchKey: { name: 'dispatch_key', type: 'text', nullable: true },
    sessionId: { name: 'session_id', type: 'text', unique: true },
    statusMessage: { name: 'status_message', type: 'jsonb', nullable: true },
    agentSkill: { name: 'agent_skill', type: 'jsonb', nullable: true },
    totalTokens: { name: 'total_tokens', type: 'bigint' },
    inferenceCostUsd: { name: 'inference_cost_usd', type: 'numeric', nullable: true },
    cancelRequestedAt: { name: 'cancel_requested_at', type: 'timestamptz', precision: 3, nullable: true },
    cancelRequestedBy: { name: 'cancel_requested_by', type: 'text', nullable: true },
    workerId: { name: 'worker_id', type: 'text', nullable: true },
    startedAt: { name: 'started_at', type: 'timestamptz', precision: 3, nullable: true },
    endedAt: { name: 'ended_at', type: 'timestamptz', precision: 3, nullable: true },
    createdAt: { name: 'created_at', type: 'timestamptz', precision: 3 },
    updatedAt: { name: 'updated_at', type: 'timestamptz', precision: 3 },
  },
});
