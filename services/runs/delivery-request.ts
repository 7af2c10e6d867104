import type { EntityManager } from 'typeorm';
import { invalid } from '../../core/api-error';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { mergeDelivery, type PullRequestDelivery } from '../../core/schemas/delivery-schemas';
import type { AgentIdentity } from '../../db/agent-identity-reads';
import type { Environment } from '../../db/environment-reads';
import { findManagedSecret } from '../../db/managed-secret-reads';

/**
 * The run's `delivery`: its own settings, then its agent identity's, then its environment's,
 * field by field. A pull request needs a repository to push: asked for (from any of them)
 * without an environment that clones one, the run is refused (nothing would ever be delivered,
 * and a CI job waiting for the PR would wait in vain); a named credential must be the team's
 * `git_credentials` secret.
 */
export async function withDelivery(
  tx: EntityManager,
  teamId: string,
  resolved: ResolvedAgentConfig,
  from: { executor: AgentIdentity | null; environment: Environment | null },
): Promise<ResolvedAgentConfig> {
  const { executor, environment } = from;
  const delivery = mergeDelivery(resolved.delivery, executor?.delivery, environment?.config.delivery);
  const pullRequest = delivery?.pull_request;
  if (!pullRequest) return delivery ? { ...resolved, delivery } : resolved;
  if (!environment?.config.github_repos?.length) {
    throw invalid(
      `\`config.delivery.pull_request\`: the run clones no repository to deliver a pull request for; give \`config.environment_id\` of an environment with \`github_repos\`, or drop \`delivery\`${executor?.delivery ? ` (the run's agent identity ${executor.uid} sets it too)` : ''}.`,
    );
  }
  await assertDeliveryCredential(tx, teamId, pullRequest, deliveryOrigin(resolved, executor, environment));
  return { ...resolved, delivery };
}

/** Where the credential's name came from, as the 400 names it: the request, the agent identity or the environment. */
function deliveryOrigin(
  resolved: ResolvedAgentConfig,
  executor: AgentIdentity | null,
  environment: Environment | null,
): string {
  if (resolved.delivery?.pull_request?.credential_secret_name) return 'config.delivery';
  if (executor?.delivery?.pull_request?.credential_secret_name) return `agent identity ${executor.uid}'s delivery`;
  if (environment) return `environment ${environment.uid}'s config.delivery`;
  return 'config.delivery';
}

/**
 * A pull request's named credential is the team's secret of kind `git_credentials`; `field`
 * names where the request gave the delivery (`config.delivery`, or an identity's `delivery`).
 */
export async function assertDeliveryCredential(
  tx: EntityManager,
  teamId: string,
  pullRequest: PullRequestDelivery,
  field: string,
): Promise<void> {
  const name = pullRequest.credential_secret_name;
  if (!name) return;
  const secret = await findManagedSecret(tx, teamId, name);
  if (!secret || secret.kind !== 'git_credentials') {
    throw invalid(
      `\`${field}.pull_request.credential_secret_name\`: your team has no secret ${name} of kind git_credentials; store one with POST /agent/secrets ({"name": "${name}", "kind": "git_credentials", "value": "username:token@host"}).`,
    );
  }
}
