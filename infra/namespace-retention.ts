import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';

/**
 * Sets how long Temporal keeps a closed workflow's history in the namespace, for the embedded
 * dev server, whose namespace the service manages: RUN_RETENTION_DAYS, so that a run's workflow
 * history goes when the run does (Temporal's minimum is 1 day, RUN_RETENTION_DAYS's too).
 */
export async function setNamespaceRetention(address: string, namespace: string, days: number): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    await connection.workflowService.updateNamespace({
      namespace,
      config: { workflowExecutionRetentionTtl: msToTs(`${days} days`) },
    });
  } finally {
    await connection.close();
  }
}
