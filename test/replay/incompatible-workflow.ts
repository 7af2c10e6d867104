import { sleep } from '@temporalio/workflow';

/** A deliberately incompatible change of the run workflow: the replay test must catch it. */
export async function agentRunWorkflow(): Promise<void> {
  await sleep('1 day');
}

/** The same for a schedule's firing. */
export async function scheduledRunWorkflow(): Promise<void> {
  await sleep('1 day');
}
