import { readFileSync } from 'node:fs';
import {
  OPEN_PULL_REQUEST_TOOL,
  parsePullRequestToolArguments,
  type PullRequestToolArguments,
} from '../../core/pull-request-tool';
import { urlSigningKeys } from '../../core/signed-urls';
import { lastAgentMessage } from '../../db/agent-answers';
import { findEnvironment } from '../../db/environment-reads';
import { loadDeliveryRun, recordDeliveryFailure } from '../../db/pull-requests';
import { loadStepRun } from '../../db/run-step-reads';
import { succeededToolCallInputs } from '../../db/tool-call-reads';
import { defuseReferences, pullRequestBody } from '../../services/pull-requests/open-or-update';
import { sessionLink, sessionLinkSigner } from '../../services/views/run-item';
import type { ActivityDeps } from '../deps';
import { repositoryUrl } from '../workspace/git';
import { baseCommitsFile } from '../workspace/workspace-paths';
import { createDeliverRepository, type DeliveredPullRequest, type DeliveryContext } from './deliver-repository';
import { deliveryFailureOf, type DeliveryFailure } from './delivery-failures';

/** One delivery of a run: at the end of a turn, or asked for by the agent's `open_pull_request`. */
export interface DeliveryRequest {
  runId: string;
  turn: number;
  /** Milliseconds since the epoch, the same on every retry: the commit's date, so a retry makes the same commit. */
  at: number;
  workspace: string;
  /** The agent's call being run now (its fields win over its earlier calls'). */
  call?: PullRequestToolArguments;
  /** Stop at the first repository that fails (the end of a turn, which then fails). */
  stopAtFailure: boolean;
}

/** How the delivery went for one repository (`owner/name`). */
export type RepositoryDelivery = { repository: string } & (
  { pullRequest: DeliveredPullRequest } | { unchanged: true } | { failure: DeliveryFailure }
);

/**
 * The one way a run's change is delivered: each repository of its environment in turn, a
 * failure recorded on its row. Undefined when the run does not deliver pull requests. Errors
 * that are no delivery failure (bugs, a database down) are thrown.
 */
export function createDeliverRun(deps: ActivityDeps) {
  const { dataSource, config, secretsKeyring } = deps;
  // Made when first needed: activities built for one purpose (tests, tools) may lack a keyring.
  let signer: ReturnType<typeof sessionLinkSigner> | undefined;
  const linkSigner = () => (signer ??= sessionLinkSigner(config, urlSigningKeys(secretsKeyring)));
  const deliverRepository = createDeliverRepository(deps);

  return async function deliverRun(request: DeliveryRequest): Promise<RepositoryDelivery[] | undefined> {
    const context = await deliveryContext(request);
    if (!context) return undefined;
    const results: RepositoryDelivery[] = [];
    for (const repo of context.repositories) {
      const repository = `${repo.owner}/${repo.repo}`;
      try {
        const pullRequest = await deliverRepository(context, repo);
        results.push(pullRequest ? { repository, pullRequest } : { repository, unchanged: true });
      } catch (err) {
        const failure = deliveryFailureOf(err, repository);
        if (!failure) throw err;
        const key = repositoryUrl(config.workspace.gitBaseUrl, repo.owner, repo.repo);
        await recordDeliveryFailure(dataSource.manager, request.runId, key, failure);
        results.push({ repository, failure });
        if (request.stopAtFailure) break;
      }
    }
    return results;
  };

  /** What this delivery commits and opens with: the title, the body, the date and the repositories. */
  async function deliveryContext(
    request: DeliveryRequest,
  ): Promise<(DeliveryContext & { repositories: { owner: string; repo: string }[] }) | undefined> {
    const { runId, turn, at, workspace } = request;
    const step = await loadStepRun(dataSource.manager, runId);
    const run = await loadDeliveryRun(dataSource.manager, runId);
    const settings = step?.config.delivery?.pull_request;
    if (!step || !run || !settings) return undefined;
    const env = run.environmentId ? await findEnvironment(dataSource.manager, run.environmentId, run.teamId) : null;
    const agent = await agentRequest(runId, turn, request.call);
    const said = agent.bodySummary ?? (await lastAgentMessage(dataSource.manager, runId, turn)) ?? undefined;
    const link = config.publicUrl ? sessionLink(linkSigner(), run.sessionId, new Date(at)) : undefined;
    return {
      runId,
      turn,
      teamId: run.teamId,
      // The agent's title is untrusted text, as its answer is; the caller's and the run's are not.
      title: agent.title !== undefined ? defuseReferences(agent.title) : (settings.title ?? run.title),
      body: pullRequestBody({ runId, link }, said),
      draft: agent.draft ?? settings.draft ?? false,
      date: Math.floor(at / 1000),
      settings,
      workspace,
      bases: readBases(config.workspace.dir, runId),
      repositories: env?.config.github_repos ?? [],
    };
  }

  /**
   * What the agent asked for with `open_pull_request`: the call now, then its latest earlier
   * calls that ran; a title and `draft` hold for the rest of the run, a summary for its turn.
   */
  async function agentRequest(
    runId: string,
    turn: number,
    call: PullRequestToolArguments | undefined,
  ): Promise<PullRequestToolArguments> {
    const earlier = await succeededToolCallInputs(dataSource.manager, runId, OPEN_PULL_REQUEST_TOOL);
    const merged: PullRequestToolArguments = { ...call };
    for (const { turn: callTurn, input } of earlier) {
      let args: PullRequestToolArguments;
      try {
        args = parsePullRequestToolArguments(input);
      } catch {
        continue;
      }
      merged.title ??= args.title;
      merged.draft ??= args.draft;
      if (callTurn === turn) merged.bodySummary ??= args.bodySummary;
    }
    return merged;
  }
}

function readBases(root: string, runId: string): Record<string, string> {
  try {
    return JSON.parse(readFileSync(baseCommitsFile(root, runId), 'utf8')) as Record<string, string>;
  } catch {
    return {};
  }
}
