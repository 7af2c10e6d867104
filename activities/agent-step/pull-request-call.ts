import type { PullRequestToolArguments } from '../../core/pull-request-tool';
import { loadRunEventByKey, type StoredRunEvent } from '../../db/run-event-reads';
import type { StepRun } from '../../db/run-step-reads';
import type { ActivityDeps } from '../deps';
import { createDeliverRun, type RepositoryDelivery } from '../delivery/deliver-run';
import type { MessageMode } from './plan-mode';

/** Where a step's `open_pull_request` call stands: its run, turn, reply and workspace. */
interface PullRequestCallAt {
  runId: string;
  turn: number;
  run: StepRun;
  mode: MessageMode;
  workspace: string;
  events: StoredRunEvent[];
  /** The transcript key of the reply that made the call. */
  assistantKey: string;
}

/**
 * What `open_pull_request` runs: the run's delivery (the end of a turn's own), every repository
 * tried. Its commit is dated when the reply that made the call was recorded, which a retried
 * step reads back, so a retry makes the same commit. Only for a run that delivers pull requests,
 * and never in plan mode.
 */
export function createPullRequestCall(deps: ActivityDeps) {
  const deliverRun = createDeliverRun(deps);
  return function pullRequestCall(
    at: PullRequestCallAt,
  ): ((request: PullRequestToolArguments) => Promise<RepositoryDelivery[]>) | undefined {
    if (!at.run.config.delivery?.pull_request || at.mode === 'plan') return undefined;
    return async (call) => {
      const reply =
        at.events.find((e) => e.eventKey === at.assistantKey) ??
        (await loadRunEventByKey(deps.dataSource.manager, at.runId, at.assistantKey));
      if (!reply) throw new Error(`the reply ${at.assistantKey} of run ${at.runId} is not recorded`);
      const { runId, turn, workspace } = at;
      const results = await deliverRun({
        runId,
        turn,
        at: reply.createdAt.getTime(),
        workspace,
        call,
        stopAtFailure: false,
      });
      return results ?? [];
    };
  };
}
