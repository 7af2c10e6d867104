import {
  MAX_BODY_SUMMARY_CHARS,
  MAX_PULL_REQUEST_TITLE_CHARS,
  OPEN_PULL_REQUEST_TOOL,
  parsePullRequestToolArguments,
  type PullRequestToolArguments,
} from '../../core/pull-request-tool';
import type { ToolSpec } from '../model/types';
import type { RepositoryDelivery } from '../delivery/deliver-run';
import { ToolInputError } from './tool-arguments';
import type { ToolContext, ToolOutcome } from './tool-types';

export const OPEN_PULL_REQUEST_SPEC: ToolSpec = {
  name: OPEN_PULL_REQUEST_TOOL,
  description:
    "Deliver your work now: commit the changes of each repository of the workspace to the run's branch, push it, and open its pull request (or update the one already open). Call it when you judge the work ready for review. Returns each pull request's URL. Changes you make afterwards are pushed to the same branch and pull request when your turn ends.",
  parameters: {
    type: 'object',
    properties: {
      title: {
        type: 'string',
        description: `The pull request's title, one line (at most ${MAX_PULL_REQUEST_TITLE_CHARS} characters; default: the run's).`,
      },
      body_summary: {
        type: 'string',
        description: `What you did and why, for the reviewer: the body quotes it (at most ${MAX_BODY_SUMMARY_CHARS} characters; default: your latest message).`,
      },
      draft: { type: 'boolean', description: 'Open it as a draft (default: as the run is configured).' },
    },
    additionalProperties: false,
  },
};

/**
 * `open_pull_request`: the run's delivery now, mid-turn, as the end of the turn does it. Each
 * repository's failure is told to the model (the turn's end still decides whether the run fails).
 */
export async function openPullRequest(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  if (!ctx.openPullRequest) {
    throw new ToolInputError('open_pull_request is not available: this run does not deliver pull requests');
  }
  let request: PullRequestToolArguments;
  try {
    request = parsePullRequestToolArguments(args);
  } catch (err) {
    throw new ToolInputError((err as Error).message);
  }
  const results = await ctx.openPullRequest(request);
  if (!results.length) return { output: 'This run has no repository to deliver.', isError: true };
  return { output: results.map(describe).join('\n'), isError: false };
}

function describe(result: RepositoryDelivery): string {
  if ('pullRequest' in result) {
    const { url, number, branch, status } = result.pullRequest;
    return `${result.repository}: pull request #${number} (${status}) ${url} from branch ${branch}`;
  }
  if ('unchanged' in result) return `${result.repository}: nothing changed, nothing delivered`;
  return `${result.repository}: failed (${result.failure.errorCode}): ${result.failure.message}`;
}
