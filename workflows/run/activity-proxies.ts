import { ActivityCancellationType, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { RunActivities } from '../../activities';
import { provisioningQueue, RunFailureType, type RunWorkflowInput } from '../run-contract';

/** How a run's workflow reaches its activities: the state store, provisioning, and the workspace's worker. */
export function runActivityProxies(settings: RunWorkflowInput['settings'], leased: boolean) {
  // State writes are short, idempotent transactions: local activities keep them off the task
  // queue and out of history (one marker each instead of three events).
  const store = proxyLocalActivities<RunActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '500ms', maximumInterval: '30s', nonRetryableErrorTypes: [RunFailureType.RUN_NOT_FOUND] },
  });
  const provisioning = proxyActivities<RunActivities>({
    ...(leased ? { taskQueue: provisioningQueue(workflowInfo().taskQueue) } : {}),
    startToCloseTimeout: '24 hours',
    heartbeatTimeout: `${settings.heartbeatTimeoutSeconds}s`,
    retry: {
      initialInterval: '1s',
      maximumInterval: '30s',
      maximumAttempts: 5,
      nonRetryableErrorTypes: [RunFailureType.USER_FAILURE],
    },
  });
  /**
   * Activities on the worker that holds the workspace. A task that waits past the
   * schedule-to-start timeout means a dead worker only if its lease has lapsed (before the
   * patch it always did, and a merely busy worker was taken for a dead one).
   */
  const onWorkspace = (taskQueue: string) =>
    proxyActivities<RunActivities>({
      taskQueue,
      scheduleToStartTimeout: `${settings.workspaceScheduleToStartSeconds}s`,
      // With the patch, a cancelled step has finished unwinding (its commands are gone) before
      // the run records CANCELLED and removes the workspace.
      ...(leased ? { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : {}),
      startToCloseTimeout: '24 hours',
      heartbeatTimeout: `${settings.heartbeatTimeoutSeconds}s`,
      retry: {
        initialInterval: `${settings.modelRetry.initialIntervalMs}ms`,
        maximumInterval: `${settings.modelRetry.maxIntervalMs}ms`,
        backoffCoefficient: 2,
        maximumAttempts: settings.modelRetry.maxAttempts,
        nonRetryableErrorTypes: [RunFailureType.USER_FAILURE, RunFailureType.WORKSPACE_LOST],
      },
    });
  /**
   * The delivery of a turn's pull requests on the workspace's worker: a forge that is down is
   * tried again with backoff (activities/delivery: DELIVERY_ATTEMPTS), then fails the turn.
   */
  const deliveryOn = (taskQueue: string) =>
    proxyActivities<RunActivities>({
      taskQueue,
      scheduleToStartTimeout: `${settings.workspaceScheduleToStartSeconds}s`,
      startToCloseTimeout: '30 minutes',
      heartbeatTimeout: `${settings.heartbeatTimeoutSeconds}s`,
      retry: {
        initialInterval: '5s',
        backoffCoefficient: 2,
        maximumInterval: '2 minutes',
        maximumAttempts: 5,
        nonRetryableErrorTypes: [RunFailureType.USER_FAILURE, RunFailureType.WORKSPACE_LOST],
      },
    });
  /** The removal of a workspace on a given worker's queue; never fails (a worker that is gone took it with it). */
  const removeWorkspaceOn = (runId: string, taskQueue: string, scheduleToStartTimeout: string, id?: string) =>
    proxyActivities<RunActivities>({
      taskQueue,
      scheduleToStartTimeout,
      startToCloseTimeout: '5 minutes',
      retry: { maximumAttempts: 3 },
    })
      .removeWorkspace(id === undefined ? { runId } : { runId, workspaceId: id })
      .then(
        () => undefined,
        () => undefined,
      );
  return { store, provisioning, onWorkspace, deliveryOn, removeWorkspaceOn };
}

export type RunActivityProxies = ReturnType<typeof runActivityProxies>;
