import { createAgentActivities } from './agent-activities';
import type { ActivityDeps } from './deps';
import { createEnvironmentActivities } from './environment-activities';
import { createRunStoreActivities } from './run-store-activities';

export type { ActivityDeps } from './deps';

/** All activities of the run workflow, built from their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createRunStoreActivities(deps),
    ...createEnvironmentActivities(deps),
    ...createAgentActivities(deps),
  };
}

export type RunActivities = ReturnType<typeof createActivities>;
