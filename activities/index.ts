import { createAgentStepActivities } from './agent-step-activities';
import type { ActivityDeps } from './deps';
import { createOrchestrationActivities } from './orchestration-activities';
import { createRunStoreActivities } from './run-store-activities';
import { createScheduleActivities } from './schedule-activities';
import { createWorkspaceActivities } from './workspace-activities';

export type { ActivityDeps } from './deps';

/** All activities of the run and scheduled-run workflows, built from their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createRunStoreActivities(deps),
    ...createWorkspaceActivities(deps),
    ...createAgentStepActivities(deps),
    ...createScheduleActivities(deps),
    ...createOrchestrationActivities(deps),
  };
}

export type RunActivities = ReturnType<typeof createActivities>;
