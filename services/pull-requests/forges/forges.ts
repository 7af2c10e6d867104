import { forgeApiBase, forgeKindOf, type ForgeKind, type ForgeRepository } from '../../../core/git-forges';
import type { Forge } from './forge';
import { giteaForge } from './gitea-forge';
import { githubForge } from './github-forge';
import { gitlabForge } from './gitlab-forge';

/** A repository host GIT_FORGES does not name: the operator has to say which forge it is. */
export class UnknownForgeError extends Error {
  override name = 'UnknownForgeError';
}

/** The adapter of the forge that serves `repository` (its host's kind in `forges`), speaking with `token`. */
export function forgeFor(
  forges: Readonly<Record<string, ForgeKind>>,
  repository: Pick<ForgeRepository, 'origin' | 'host'>,
  token: string | undefined,
  options: { timeoutMs?: number } = {},
): Forge {
  const kind = forgeKindOf(forges, repository.host);
  if (!kind) {
    throw new UnknownForgeError(
      `no forge is configured for ${repository.host}: add ${repository.host}=<github|gitlab|gitea> to GIT_FORGES`,
    );
  }
  const settings = { apiBase: forgeApiBase(kind, repository), token, timeoutMs: options.timeoutMs };
  switch (kind) {
    case 'github':
      return githubForge(settings);
    case 'gitlab':
      return gitlabForge(settings);
    case 'gitea':
      return giteaForge(settings);
  }
}
