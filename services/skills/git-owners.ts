import { BUNDLED_SKILL_OWNER, BUNDLED_SKILL_REPO } from './bundled-skills';
import { isGitOwnerAllowed } from '../../core/git-owners';
import { ApiError } from '../../core/api-error';

/**
 * Refuses (403) a repository whose owner is not in GIT_ALLOWED_OWNERS: GIT_TOKEN is the
 * platform's credential, and a request must not point it at repositories the operator did not
 * mean it for. `allowed` is lower-case; undefined allows every owner.
 */
export function assertGitOwnerAllowed(
  allowed: readonly string[] | undefined,
  repository: { owner: string; repo: string },
  field: string,
): void {
  if (allowed === undefined || isGitOwnerAllowed(allowed, repository.owner)) return;
  const limit = allowed.length
    ? `limits repositories to the owners ${allowed.join(', ')}, and ${repository.owner} is not one of them`
    : 'allows no repository owner';
  throw new ApiError(
    'not_authorized',
    `\`${field}\`: repository ${repository.owner}/${repository.repo} is not allowed: this service's GIT_ALLOWED_OWNERS ${limit}.`,
  );
}

/** The same rule for a skill spec (`owner/repo:…`, already validated); bundled skills are always allowed. */
export function assertSkillOwnerAllowed(allowed: readonly string[] | undefined, spec: string, field: string): void {
  const [owner = '', repo = ''] = spec.slice(0, spec.indexOf(':')).split('/');
  if (owner === BUNDLED_SKILL_OWNER && repo === BUNDLED_SKILL_REPO) return;
  assertGitOwnerAllowed(allowed, { owner, repo }, field);
}
