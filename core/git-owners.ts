/** Whether GIT_ALLOWED_OWNERS (lower-case; undefined: every owner) lets the platform's token near an owner's repositories. */
export function isGitOwnerAllowed(allowed: readonly string[] | undefined, owner: string): boolean {
  return allowed === undefined || allowed.includes(owner.toLowerCase());
}
