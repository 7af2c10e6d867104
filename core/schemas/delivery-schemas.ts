import { z } from './zod';
import { managedSecretNameSchema } from './managed-secret-schemas';

/**
 * A branch name git and every forge take: no `..`, `@{`, `//`, control characters, spaces or
 * `~^:?*[\`, no part starting with `.` or ending with `.lock`, not ending in `/` or `.`.
 */
const BRANCH = /^(?!.*(?:\.\.|@\{|\/\/|\/\.|\.lock(?:\/|$)))(?![./-])[^\s~^:?*[\\\x00-\x1f\x7f]+(?<![./])$/;
const BRANCH_RULE =
  'must be a git branch name such as `agent-runs/fix-login` (no spaces, `..`, `~^:?*[\\`, `@{`, no part starting with `.` or ending with `.lock`)';

const branchName = z.string().min(1).max(200).regex(BRANCH, BRANCH_RULE);

/** `config.delivery.pull_request`: deliver each turn's change as a branch and a pull request. */
export const pullRequestDeliverySchema = z
  .strictObject({
    base: branchName.optional().openapi({
      description: 'The branch the pull request merges into (default: the branch the repository was cloned at).',
    }),
    branch: branchName
      .optional()
      .openapi({ description: 'The branch the worker pushes (default `agent-runs/<run id>`).' }),
    draft: z.boolean().optional().openapi({
      description: "Open the pull request as a draft (default false; the agent's open_pull_request may say otherwise).",
    }),
    title: z.string().min(1).max(250).optional().openapi({
      description:
        "The pull request's title (default: the run's title). A title the agent gives its open_pull_request tool wins.",
    }),
    credential_secret_name: managedSecretNameSchema.optional().openapi({
      description:
        "The team's managed secret of kind `git_credentials` to push and open the pull request with (default: the team's `git_credentials` secret for the repository's host, else GIT_TOKEN where the operator sets GIT_TOKEN_FOR_PUSH=true).",
    }),
  })
  .openapi('PullRequestDelivery');

/** `config.delivery`: on a run, an agent identity, an environment or a schedule's `agent_config`. */
export const deliverySchema = z
  .strictObject({ pull_request: pullRequestDeliverySchema.optional() })
  .openapi('Delivery', {
    description:
      "What the worker does with a turn's change in the cloned repositories. `pull_request`: commit it on a branch, push it from outside the sandbox and open or update one pull request per repository (docs/guide/pull-requests.md).",
  });

export type DeliverySettings = z.infer<typeof deliverySchema>;
export type PullRequestDelivery = z.infer<typeof pullRequestDeliverySchema>;

/**
 * A run's delivery from its layers, nearest first (the run's own, its agent identity's, its
 * environment's): each `pull_request` field is the nearest layer's that sets it.
 */
export function mergeDelivery(...layers: (DeliverySettings | null | undefined)[]): DeliverySettings | undefined {
  const pullRequests = layers.flatMap((layer) => (layer?.pull_request ? [layer.pull_request] : []));
  if (!pullRequests.length) return layers.find((layer) => layer) ?? undefined;
  return { pull_request: Object.assign({}, ...pullRequests.reverse()) as PullRequestDelivery };
}
