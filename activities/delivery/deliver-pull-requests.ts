import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { forgeKindOf, parseRepositoryUrl } from '../../core/git-forges';
import { isGitOwnerAllowed } from '../../core/git-owners';
import type { PullRequestDelivery } from '../../core/schemas/delivery-schemas';
import { urlSigningKeys } from '../../core/signed-urls';
import { lastAgentMessage } from '../../db/agent-answers';
import { findEnvironment } from '../../db/environment-reads';
import {
  claimPullRequestRow,
  loadDeliveryRun,
  recordDeliveryFailure,
  recordPullRequest,
  recordPushedHead,
} from '../../db/pull-requests';
import { loadStepRun } from '../../db/run-step-reads';
import { forgeFor } from '../../services/pull-requests/forges/forges';
import { openOrUpdatePullRequest, pullRequestBody } from '../../services/pull-requests/open-or-update';
import { sessionLink, sessionLinkSigner } from '../../services/views/run-item';
import { RunFailureType } from '../../workflows/run-contract';
import type { ActivityDeps } from '../deps';
import { withHeartbeat } from '../heartbeat';
import { runProcesses } from '../sandbox/sandboxed-process';
import { repositoryUrl } from '../workspace/git';
import { baseCommitsFile, workspaceDir } from '../workspace/workspace-paths';
import { isRegularFile } from '../agent-step/regular-file';
import { makeDeliveryCommit, packCommit } from './delivery-commit';
import { DeliveryFailure, deliveryFailureOf, failureToThrow } from './delivery-failures';
import { pushCredential } from './git-credential';
import { withStagingRepository } from './staging-git';

/** Attempts of the delivery activity (workflows/run/activity-proxies.ts): on the last, a forge still down fails the turn. */
export const DELIVERY_ATTEMPTS = 5;

interface DeliveryContext {
  runId: string;
  turn: number;
  teamId: string;
  title: string;
  body: string;
  /** Seconds since the epoch: the commit's date. */
  date: number;
  settings: PullRequestDelivery;
  workspace: string;
  bases: Record<string, string>;
}

/**
 * After a turn that ended with changes, on the worker that holds the workspace: each cloned
 * repository's change as a commit on the run's branch, pushed from a staging repository of the
 * worker's own (the credential never meets the agent's repository or its sandbox), and one pull
 * request opened or updated for it, recorded in run_pull_requests.
 */
export function createDeliveryActivities(deps: ActivityDeps) {
  const { dataSource, config, sandbox, secretsKeyring } = deps;
  const signer = sessionLinkSigner(config, urlSigningKeys(secretsKeyring));

  async function deliverOne(at: DeliveryContext, repo: { owner: string; repo: string }): Promise<void> {
    const url = repositoryUrl(config.workspace.gitBaseUrl, repo.owner, repo.repo);
    const parsed = parseRepositoryUrl(url);
    const kind = parsed && forgeKindOf(config.workspace.gitForges, parsed.host);
    if (!parsed || !kind) {
      throw new DeliveryFailure(
        'pull_request_rejected',
        `No forge is configured for ${parsed?.host ?? url}: an operator adds ${parsed?.host ?? '<host>'}=<github|gitlab|gitea> to GIT_FORGES.`,
      );
    }
    if (!isGitOwnerAllowed(config.workspace.gitAllowedOwners, parsed.owner)) {
      throw new DeliveryFailure(
        'pull_request_owner_not_allowed',
        `Pushing to ${parsed.owner}/${parsed.name} is not allowed: this service's GIT_ALLOWED_OWNERS does not include ${parsed.owner}.`,
      );
    }
    if (!existsSync(path.join(at.workspace, repo.repo, '.git'))) return;
    const credential = await pushCredential(
      dataSource.manager,
      { config, secretsKeyring },
      at.teamId,
      parsed.host,
      at.settings.credential_secret_name,
    );
    const auth = { token: credential.token, username: credential.username };
    const processes = runProcesses(sandbox, at.runId);
    await withStagingRepository(async (staging) => {
      const branch = at.settings.branch ?? `agent-runs/${at.runId}`;
      const remote = await staging.remoteRefs(url, branch, auth);
      const row = await claimPullRequestRow(dataSource.manager, {
        runId: at.runId,
        teamId: at.teamId,
        repository: url,
        forge: kind,
        host: parsed.host,
        owner: parsed.owner,
        name: parsed.name,
        branch,
        base: at.settings.base ?? remote.defaultBranch ?? 'main',
      });
      const sha = await makeDeliveryCommit(processes, repo.repo, {
        previous: row.headSha ?? undefined,
        author: config.workspace.gitCommitAuthor,
        date: at.date,
        message: `${at.title}\n\nAgent run ${at.runId}, turn ${at.turn}.`,
        hasGitignore: isRegularFile(path.join(at.workspace, repo.repo, '.gitignore')),
      });
      // Nothing changed in this repository, and nothing was delivered for it before.
      if (!row.headSha && sha === at.bases[repo.repo]) return;
      // A retry after a worker died mid-push finds its own commit there already.
      if (remote.branchHead !== sha) {
        await packCommit(processes, repo.repo, sha, staging.packFile);
        await staging.importPack(sha);
        await staging.push(url, sha, row.branch, row.headSha ?? undefined, auth);
      }
      await recordPushedHead(dataSource.manager, at.runId, url, sha);
      const forge = forgeFor(config.workspace.gitForges, parsed, credential.token);
      const pullRequest = await openOrUpdatePullRequest(forge, parsed, {
        head: row.branch,
        base: row.base,
        title: at.title,
        body: at.body,
        draft: at.settings.draft ?? false,
      });
      await recordPullRequest(dataSource.manager, at.runId, url, {
        number: pullRequest.number,
        url: pullRequest.url,
        status: pullRequest.state,
      });
    });
  }

  return {
    async deliverPullRequests({ runId, turn, at }: { runId: string; turn: number; at: number }): Promise<void> {
      const ctx = Context.current();
      await withHeartbeat(async () => {
        const workspace = workspaceDir(config.workspace.dir, runId);
        if (!existsSync(workspace)) {
          throw ApplicationFailure.nonRetryable(
            `The workspace of run ${runId} is not on this worker`,
            RunFailureType.WORKSPACE_LOST,
          );
        }
        const step = await loadStepRun(dataSource.manager, runId);
        const run = await loadDeliveryRun(dataSource.manager, runId);
        const settings = step?.config.delivery?.pull_request;
        if (!step || !run || !settings) return;
        const env = run.environmentId ? await findEnvironment(dataSource.manager, run.environmentId, run.teamId) : null;
        const answer = await lastAgentMessage(dataSource.manager, runId, turn);
        const link = config.publicUrl ? sessionLink(signer, run.sessionId, new Date(at)) : undefined;
        const context: DeliveryContext = {
          runId,
          turn,
          teamId: run.teamId,
          title: settings.title ?? run.title,
          body: pullRequestBody({ runId, link }, answer ?? undefined),
          date: Math.floor(at / 1000),
          settings,
          workspace,
          bases: readBases(config.workspace.dir, runId),
        };
        for (const repo of env?.config.github_repos ?? []) {
          try {
            await deliverOne(context, repo);
          } catch (err) {
            const failure = deliveryFailureOf(err, `${repo.owner}/${repo.repo}`);
            if (!failure) throw err;
            const key = repositoryUrl(config.workspace.gitBaseUrl, repo.owner, repo.repo);
            await recordDeliveryFailure(dataSource.manager, runId, key, failure);
            throw failureToThrow(failure, ctx.info.attempt >= DELIVERY_ATTEMPTS);
          }
        }
      });
    },
  };
}

function readBases(root: string, runId: string): Record<string, string> {
  try {
    return JSON.parse(readFileSync(baseCommitsFile(root, runId), 'utf8')) as Record<string, string>;
  } catch {
    return {};
  }
}
