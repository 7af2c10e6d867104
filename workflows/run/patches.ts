/**
 * Executions that took this patch provision through the capacity-aware provisioning queue, tell
 * a dead workspace worker by its lapsed lease instead of by how long a task waited, wait for a
 * cancelled step to finish unwinding, and remove an abandoned workspace only if it is still the
 * one they left.
 */
export const WORKSPACE_LEASE_PATCH = 'workspace-worker-lease';
/** Executions that took this patch cancel the run's unfinished descendants when it is cancelled. */
export const CANCEL_DESCENDANTS_PATCH = 'cancel-descendants';
/**
 * Executions that took this patch wait, QUEUED, for a slot of their team (TEAM_MAX_CONCURRENT_RUNS)
 * before each turn starts, and wake the team's waiting runs when a turn ends.
 */
export const TEAM_ADMISSION_PATCH = 'team-admission';
/** Executions that took this patch give up a run's workspace as soon as a turn fails for the run's disk limit. */
export const DISK_LIMIT_RELEASE_PATCH = 'disk-limit-release';
/**
 * Executions that took this patch wait for a blocked call's decision while its workspace is being
 * removed, not after: a worker killed during that removal no longer holds the decision up for the
 * removal's 5-minute timeout.
 */
export const BLOCKED_RELEASE_PATCH = 'blocked-release-concurrent';
/**
 * Executions that took this patch deliver a turn's change as a branch and a pull request per
 * cloned repository (config.delivery.pull_request) on the workspace's worker before the turn ends.
 */
export const PULL_REQUEST_DELIVERY_PATCH = 'pull-request-delivery';
