import type { ForgeFailure } from './forge-errors';

/**
 * What git prints when a forge refuses a push, by failure, first match wins: GitHub's
 * (`GH006: Protected branch update failed`), GitLab's (`You are not allowed to push code to
 * protected branches`) and Gitea's (`Not allowed to push to protected branch`) words, and git's own.
 */
const PUSH_REJECTIONS: [ForgeFailure, RegExp][] = [
  ['branch_protected', /protected branch|branch is protected|GH006/i],
  // Someone else's commits on the branch: git refuses to replace them without --force.
  ['conflict', /\((non-fast-forward|fetch first|stale info)\)|\[rejected\]/i],
  [
    'unauthorized',
    /authentication failed|access denied|could not read (username|password)|returned error: 401|invalid username or password/i,
  ],
  ['forbidden', /returned error: 403|permission to .* denied|not allowed to push|write access .* not granted/i],
  [
    'not_found',
    /repository not found|returned error: 404|repository '.*' not found|does not appear to be a git repository/i,
  ],
  [
    'unavailable',
    /could not resolve host|failed to connect|connection (refused|reset|timed out)|operation timed out|returned error: (5\d\d|429)|RPC failed|early EOF|remote end hung up/i,
  ],
];

/** The failure a `git push` that exited non-zero means, from its stderr; `invalid` for what none of these say. */
export function pushFailureOf(stderr: string): ForgeFailure {
  return PUSH_REJECTIONS.find(([, words]) => words.test(stderr))?.[0] ?? 'invalid';
}
