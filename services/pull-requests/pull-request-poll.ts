import type { DataSource } from 'typeorm';
import type { ForgeKind } from '../../core/git-forges';
import { SecretDecryptionError } from '../../core/secrets';
import type { Logger } from '../../core/logger';
import { notePullRequestChecked, recordPullRequestStatus } from '../../db/pull-request-events';
import { pullRequestsDueForPoll, type PullRequestArtifact } from '../../db/pull-request-reads';
import { ForgeError } from './forges/forge-errors';
import { forgeFor, UnknownForgeError } from './forges/forges';

/** The token that may read a run's pull request on its forge; undefined: none (the forge is not asked). */
export type CredentialFor = (pullRequest: PullRequestArtifact) => Promise<string | undefined> | string | undefined;

export interface PullRequestPollDeps {
  dataSource: DataSource;
  /** GIT_FORGES over the built-ins: the adapter by host. */
  forges: Readonly<Record<string, ForgeKind>>;
  /** Hosts whose forge sends webhooks (FORGE_WEBHOOK_SECRETS): not polled. */
  webhookHosts: readonly string[];
  /** How long ago a pull request must have been checked to be asked again. */
  staleSeconds: number;
  credentialFor: CredentialFor;
  logger: Logger;
}

/**
 * Keeps the status of pull requests on forges without webhooks current: asks the forge about
 * a batch of open and draft ones (and ones it was never asked about) not checked for
 * `staleSeconds`, least recently checked first, and records each answer (a `pull_request` event
 * when the status changed). A pull request the forge does not answer for is noted as checked
 * and waits for the next round.
 */
export function createPullRequestPoll(deps: PullRequestPollDeps) {
  async function check(pullRequest: PullRequestArtifact): Promise<boolean> {
    try {
      const origin = new URL(pullRequest.url).origin;
      const forge = forgeFor(deps.forges, { origin, host: pullRequest.host }, await deps.credentialFor(pullRequest));
      const read = await forge.read({ owner: pullRequest.owner, name: pullRequest.name }, pullRequest.number!);
      return await deps.dataSource.transaction((tx) =>
        recordPullRequestStatus(tx, { ...pullRequest, number: read.number, status: read.state, source: 'poll' }),
      );
    } catch (err) {
      // One pull request's forge or credential (a secret under a key no longer configured) stops
      // neither the batch nor the maintenance of every other team's.
      if (!(err instanceof ForgeError || err instanceof UnknownForgeError || err instanceof SecretDecryptionError))
        throw err;
      deps.logger.warn('could not read a pull request from its forge', {
        run_id: pullRequest.runId,
        url: pullRequest.url,
        error: err.message,
      });
      await notePullRequestChecked(deps.dataSource.manager, pullRequest.runId, pullRequest.repository);
      return false;
    }
  }

  return {
    /** One batch of up to `limit`: how many were asked, how many changed, whether more are due. */
    async pollBatch(limit: number): Promise<{ checked: number; changed: number; more: boolean }> {
      const due = await pullRequestsDueForPoll(deps.dataSource.manager, {
        staleSeconds: deps.staleSeconds,
        limit,
        skipHosts: [...deps.webhookHosts],
      });
      let changed = 0;
      for (const pullRequest of due) if (await check(pullRequest)) changed++;
      return { checked: due.length, changed, more: due.length === limit };
    },
  };
}
