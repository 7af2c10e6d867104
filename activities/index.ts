import { createAgentStepActivities } from './agent-step-activities';
import { createDeliveryActivities } from './delivery/deliver-pull-requests';
import type { ActivityDeps } from './deps';
import { createMaintenanceActivities } from './maintenance-activities';
import { createOrchestrationActivities } from './orchestration-activities';
import { createRunStoreActivities } from './run-store-activities';
import { createScheduleActivities } from './schedule-activities';
import { createWorkspaceActivities } from './workspace-activities';

export type { ActivityDeps } from './deps';

/** All activities of the run, scheduled-run and maintenance workflows, built from their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createRunStoreActivities(deps),
    ...createWorkspaceActivities(deps),
    ...createAgentStepActivities(deps),
    ...createDeliveryActivities(deps),
    ...createScheduleActivities(deps),
    ...createOrchestrationActivities(deps),
    ...createMaintenanceActivities(deps),
  };
}

export type RunActivities = ReturnType<typeof createActivities>;
