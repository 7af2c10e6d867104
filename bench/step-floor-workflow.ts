import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

/**
 * The floors `npm run bench:steps` compares a run's steps with (bench/step-latency.ts): a
 * workflow of `steps` steps that are nothing but one activity spawning a bare sandbox, or one
 * local activity. Bundled by the bench's worker, never by the service's.
 */
export interface FloorActivities {
  bareSandboxStep(): Promise<number>;
  localStep(): Promise<number>;
}

const { bareSandboxStep } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });
const { localStep } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

export async function stepFloorWorkflow(steps: number, kind: 'activity' | 'local'): Promise<void> {
  for (let i = 0; i < steps; i += 1) await (kind === 'activity' ? bareSandboxStep() : localStep());
}
