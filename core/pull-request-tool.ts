/** The built-in tool with which the agent opens or updates the run's pull requests (offered with `config.delivery.pull_request`). */
export const OPEN_PULL_REQUEST_TOOL = 'open_pull_request';

/** The longest title, as `config.delivery.pull_request.title` takes it. */
export const MAX_PULL_REQUEST_TITLE_CHARS = 250;

/** The longest summary taken (a pull request's body quotes at most its first 4000 characters). */
export const MAX_BODY_SUMMARY_CHARS = 20_000;

/** What the agent asks of the pull requests it opens: each field optional. */
export interface PullRequestToolArguments {
  title?: string;
  /** What the agent says it did: quoted in the body in place of its final answer. */
  bodySummary?: string;
  draft?: boolean;
}

/**
 * The tool's arguments, checked: a title on one line, a summary within bounds, `draft` a
 * boolean. Throws an Error saying what to fix (the model reads it as the call's result).
 */
export function parsePullRequestToolArguments(args: Record<string, unknown>): PullRequestToolArguments {
  const parsed: PullRequestToolArguments = {};
  const title = text(args, 'title', MAX_PULL_REQUEST_TITLE_CHARS);
  if (title !== undefined) {
    // A title is one line: newlines and runs of spaces become one space.
    parsed.title = title.replace(/\s+/g, ' ').trim();
    if (!parsed.title) throw new Error('`title` must have some text in it (or be left out)');
  }
  const summary = text(args, 'body_summary', MAX_BODY_SUMMARY_CHARS)?.trim();
  if (summary) parsed.bodySummary = summary;
  const draft = args.draft;
  if (draft !== undefined && draft !== null) {
    if (typeof draft !== 'boolean') throw new Error('`draft` must be true or false');
    parsed.draft = draft;
  }
  const unknown = Object.keys(args).filter((k) => !['title', 'body_summary', 'draft'].includes(k));
  if (unknown.length)
    throw new Error(
      `unknown argument ${unknown.map((k) => `\`${k}\``).join(', ')}: only title, body_summary and draft`,
    );
  return parsed;
}

function text(args: Record<string, unknown>, name: string, max: number): string | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new Error(`\`${name}\` must be a string`);
  if (value.length > max) throw new Error(`\`${name}\` is at most ${max} characters`);
  // PostgreSQL text (and a forge's) cannot hold NUL.
  return value.replace(/\u0000/g, '');
}
