import { groups } from './variables';
import { defaultOf, rangeOf, type Reader, type Variable } from './variable';

/** The command that writes the files of `configDocs()` (the unit test checks they are current). */
export const CONFIG_DOCS_COMMAND = 'npm run config:docs';

/** The files written from the declarations, by path from the repository root, with their content. */
export const configDocs = (): { path: string; content: string }[] => [
  { path: 'docs/configuration.md', content: configurationMarkdown() },
  { path: '.env.example', content: envExample() },
];

const MARKDOWN_INTRO = `# Configuration

All configuration comes from environment variables, read and validated once at start; a bad
value stops the process with a message naming the variable. Leave a variable unset (or empty)
for its default. [\`.env.example\`](../.env.example) lists them all, commented out. (The
command-line client has its own two, \`AGENT_RUNS_URL\` and \`AGENT_RUNS_API_KEY\`.)

Give the API and the workers the same configuration. After each meaning, in parentheses: the
values allowed, where there is a range, and which processes read the variable: the API, the
workers, or \`npm start\` for what it does itself (it starts the embedded PostgreSQL and Temporal
dev server; it also runs an API and a worker, so it reads everything they do). \`npm run migrate\`,
\`npm run keys\` and \`npm run secrets\` read the database settings, and \`npm run secrets\` the
secrets keys too.

The settings a run's workflow is started with (\`AGENT_DEFAULT_MODEL\`, \`AGENT_IDLE_TIMEOUT_MINUTES\`,
\`MODEL_RETRY_*\`, \`ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS\`, \`WORKSPACE_SCHEDULE_TO_START_SECONDS\` and
\`WORKER_LEASE_SECONDS\`) are fixed when the run is created, by the API or by the worker that fires
a schedule or runs a factory's dispatch: a changed value applies to new runs.

Written by \`${CONFIG_DOCS_COMMAND}\` from the declarations in \`core/config/\`: change those, not this file.`;

const ENV_INTRO = `# Configuration of the agent runs service: every environment variable it reads, commented out,
# with its default and meaning (more in docs/configuration.md). Written by \`${CONFIG_DOCS_COMMAND}\`
# from the declarations in core/config/: change those, not this file.
#
# The service reads these from the process environment; it does not read this file by
# itself. Copy it to .env (ignored by git), uncomment what you change, and export it before
# starting, e.g.:  set -a && . ./.env && set +a && npm start
#
# A commented-out variable takes the default shown; an empty value counts as unset.
# Give the API and the workers the same configuration.`;

/** docs/configuration.md: an introduction, then a table of the variables under each heading. */
export function configurationMarkdown(): string {
  const sections = groups.map((g) => {
    const rows = Object.entries(g.variables).map(
      ([name, v]) => `| \`${name}\` | ${cell(defaultMarkdown(name, v))} | ${cell(meaning(v, '–', '`npm start`'))} |`,
    );
    return [`## ${g.title}`, '', '| variable | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
  });
  return [MARKDOWN_INTRO, ...sections].join('\n\n') + '\n';
}

/** .env.example: every variable commented out, with its default (when it has a value) and meaning. */
export function envExample(): string {
  const sections = groups.map((g) => {
    const lines = Object.entries(g.variables).map(([name, v]) => {
      const value = defaultOf(v);
      let about = plain(meaning(v, '-', 'npm start'));
      if (value === undefined) {
        const unset = plain(defaultMarkdown(name, v));
        if (unset !== 'unset') about += unset.startsWith('unset') ? `; ${unset}` : `; default: ${unset}`;
      }
      return `# ${name}=${value === undefined ? '' : shellWord(String(value))}  # ${about}`;
    });
    return [`# --- ${g.title} ${'-'.repeat(Math.max(3, 90 - g.title.length))}`, '', ...lines].join('\n');
  });
  return [ENV_INTRO, ...sections].join('\n\n') + '\n';
}

/** The default column: the value a variable takes when unset, or what its declaration says happens then. */
function defaultMarkdown(name: string, v: Variable): string {
  const value = defaultOf(v);
  if (value !== undefined && v.unset !== undefined) {
    throw new Error(`${name}: has a default (${String(value)}), so its declaration must not say what unset means`);
  }
  if (value !== undefined) return `\`${String(value)}\``;
  if (v.unset === undefined) throw new Error(`${name}: has no default, so its declaration must say what unset means`);
  return v.unset;
}

/** The description, then in parentheses the range (when numeric) and the readers. */
function meaning(v: Variable, dash: string, npmStart: string): string {
  const range = rangeOf(v);
  const notes = [
    range && (range.max === Number.MAX_SAFE_INTEGER ? `${range.min} or more` : `${range.min}${dash}${range.max}`),
    readers(v.readBy.map((r: Reader) => (r === 'npm start' ? npmStart : r))),
  ].filter(Boolean);
  return `${v.description} (${notes.join('; ')})`;
}

const readers = (names: string[]): string =>
  names.length < 2 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;

const cell = (markdown: string): string => markdown.replace(/\|/g, '\\|');

/** Markdown as plain text for a comment: code spans lose their backticks. */
const plain = (markdown: string): string => markdown.replace(/`([^`]*)`/g, '$1');

/** A value as a shell word, quoted only when it needs to be. */
const shellWord = (value: string): string =>
  /^[A-Za-z0-9._/:@+-]*$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
