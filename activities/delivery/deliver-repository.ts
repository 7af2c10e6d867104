import { existsSync } from 'node:fs';
import path from 'node:path';
import { forgeKindOf, parseRepositoryUrl, type ForgeKind, type ForgeRepository } from '../../core/git-forges';
import { isGitOwnerAllowed } from '../../core/git-owners';
import type { PullRequestDelivery } from '../../core/schemas/delivery-schemas';
import { claimPullRequestRow, recordPullRequest, recordPushedHead } from '../../db/pull-requests';
import { forgeFor } from '../../services/pull-requests/forges/forges';
import { openOrUpdatePullRequest } from '../../services/pull-requests/open-or-update';
import type { ActivityDeps } from '../deps';
import { isRegularFile } from '../agent-step/regular-file';
import { runProcesses } from '../sandbox/sandboxed-process';
import { repositoryUrl } from '../workspace/git';
import { makeDeliveryCommit, packCommit } from './delivery-commit';
import { DeliveryFailure } from './delivery-failures';
import { pushCredential } from './git-credential';
import { withStagingRepository } from './staging-git';

/** What one delivery of a run does, the same for each repository. */
export interface DeliveryContext {
  runId: string;
  turn: number;
  teamId: string;
  title: string;
  body: string;
  draft: boolean;
  /** Seconds since the epoch: the commit's date. */
  date: number;
  settings: PullRequestDelivery;
  workspace: string;
  /** The commit each repository was cloned at, by directory. */
  bases: Record<string, string>;
}

/** The pull request a repository's delivery opened or updated. */
export interface DeliveredPullRequest {
  number: number;
  url: string;
  branch: string;
  status: string;
  head: string;
}

/**
 * One cloned repository's change as a commit on the run's branch, pushed from a staging
 * repository of the worker's own (the credential never meets the agent's repository or its
 * sandbox), and its one pull request opened or updated, recorded in run_pull_requests.
 * Undefined when there is nothing to deliver (not cloned, or unchanged and never delivered).
 */
export function createDeliverRepository(deps: ActivityDeps) {
  const { dataSource, config, sandbox, secretsKeyring } = deps;

  return async function deliverRepository(
    at: DeliveryContext,
    repo: { owner: string; repo: string },
  ): Promise<DeliveredPullRequest | undefined> {
    const url = repositoryUrl(config.workspace.gitBaseUrl, repo.owner, repo.repo);
    const { parsed, kind } = pushTarget(url);
    if (!existsSync(path.join(at.workspace, repo.repo, '.git'))) return undefined;
    const credential = await pushCredential(
      dataSource.manager,
      { config, secretsKeyring },
      at.teamId,
      parsed.host,
      at.settings.credential_secret_name,
    );
    const auth = { token: credential.token, username: credential.username };
    const processes = runProcesses(sandbox, at.runId);
    return withStagingRepository(async (staging) => {
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
      if (!row.headSha && sha === at.bases[repo.repo]) return undefined;
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
        draft: at.draft,
      });
      await recordPullRequest(dataSource.manager, at.runId, url, {
        number: pullRequest.number,
        url: pullRequest.url,
        status: pullRequest.state,
      });
      return {
        number: pullRequest.number,
        url: pullRequest.url,
        branch: row.branch,
        status: pullRequest.state,
        head: sha,
      };
    });
  };

  /** The repository's forge and path, when this service may push there. */
  function pushTarget(url: string): { parsed: ForgeRepository; kind: ForgeKind } {
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
    return { parsed, kind };
  }
}
