import type { Forge, PullRequest, RepositoryPath } from './forges/forge';
import { ForgeError } from './forges/forge-errors';

export interface PullRequestContent {
  head: string;
  base: string;
  title: string;
  body: string;
  draft: boolean;
}

/**
 * The one pull request of the branch: the open one found is updated (title and body), else one
 * is opened; an open that clashes with one opened meanwhile (a retry racing an earlier attempt)
 * finds it. However often it is called, the branch has one pull request.
 */
export async function openOrUpdatePullRequest(
  forge: Forge,
  repository: RepositoryPath,
  content: PullRequestContent,
): Promise<PullRequest> {
  const found = await forge.findOpen(repository, content.head);
  if (found) return updated(forge, repository, found, content);
  try {
    return await forge.open(repository, content);
  } catch (err) {
    if (!(err instanceof ForgeError && err.failure === 'conflict')) throw err;
    const raced = await forge.findOpen(repository, content.head);
    if (!raced) throw err;
    return updated(forge, repository, raced, content);
  }
}

async function updated(
  forge: Forge,
  repository: RepositoryPath,
  found: PullRequest,
  content: PullRequestContent,
): Promise<PullRequest> {
  const sameTitle = found.title === content.title || found.title.endsWith(content.title);
  if (sameTitle && found.body === content.body) return found;
  return forge.update(repository, found, { title: content.title, body: content.body });
}

/**
 * Untrusted text (the agent's) that notifies and links nobody on a forge: a zero-width space
 * after each `@` of a mention and each `#` of an issue reference, so `Fixes #12` closes nothing.
 */
export function defuseReferences(text: string): string {
  return text.replace(/@(?=[A-Za-z0-9])/g, '@\u200b').replace(/#(?=\d)/g, '#\u200b');
}

/** The longest part of the agent's answer a body quotes. */
const MAX_ANSWER_CHARS = 4000;

/**
 * The pull request's body: a link to the run and what the agent said it did, quoted as untrusted
 * text (a blockquote, mentions and references defused so the forge notifies nobody).
 */
export function pullRequestBody(
  run: { runId: string; link: string | undefined },
  finalAnswer: string | undefined,
): string {
  const answer = (finalAnswer ?? '').trim();
  const trimmed = answer.length > MAX_ANSWER_CHARS ? `${answer.slice(0, MAX_ANSWER_CHARS)}…` : answer;
  const quoted = trimmed
    ? defuseReferences(trimmed)
        .split('\n')
        .map((line) => `> ${line}`)
        .join('\n')
    : '> (the agent gave no final answer)';
  const where = run.link ? `[run ${run.runId}](${run.link})` : `run ${run.runId}`;
  return [`Delivered by agent-runs from ${where}.`, '', 'What the agent said it did:', '', quoted].join('\n');
}
