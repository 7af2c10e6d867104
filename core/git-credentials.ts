/** A team's credential for one git host: a managed secret of kind `git_credentials`. */
export interface GitCredential {
  /** `host` or `host:port`, lower case, as repository URLs name it. */
  host: string;
  username: string;
  token: string;
}

export const GIT_CREDENTIAL_RULE =
  '`username:token@host`, the host as repository URLs name it (with its port where there is one), e.g. `ci-bot:glpat-xxxx@gitlab.example.com`';

const HOST = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$/;

/** Reads a `git_credentials` secret's value; undefined when it is not `username:token@host`. */
export function parseGitCredential(value: string): GitCredential | undefined {
  const at = value.lastIndexOf('@');
  const colon = value.indexOf(':');
  if (at < 0 || colon < 1 || colon > at - 2 || /[\s]/.test(value)) return undefined;
  const host = value.slice(at + 1).toLowerCase();
  if (!HOST.test(host)) return undefined;
  return { host, username: value.slice(0, colon), token: value.slice(colon + 1, at) };
}
