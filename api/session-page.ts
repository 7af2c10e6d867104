import { isTerminal } from '../core/run-state';
import type { Run } from '../db/rows/run';
import type { StoredRunEvent } from '../db/run-event-reads';
import type { PendingFollowup } from '../db/followup-reads';
import type { ChildRunStatus } from '../db/run-lineage-reads';
import { escapeHtml, page } from './html';

/** Outputs longer than this many lines are folded behind a <details> toggle. */
const FOLD_LINES = 20;

function pre(text: unknown, className = ''): string {
  return `<pre${className ? ` class="${className}"` : ''}>${escapeHtml(text)}</pre>`;
}

function folded(label: string, text: string): string {
  // A final newline ends the last line; it does not start another.
  const lines = text.replace(/\n$/, '').split('\n').length;
  if (lines <= FOLD_LINES) return pre(text, 'output');
  return `<details class="fold"><summary>${escapeHtml(label)} (${lines} lines)</summary>${pre(text, 'output')}</details>`;
}

/** A unified diff with added and removed lines marked for colouring. */
function renderDiff(diff: string): string {
  if (!diff) return '<p class="meta">Change reverted: the file is back to its committed state.</p>';
  const lines = diff.split('\n').map((line) => {
    const cls =
      line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff --git') || line.startsWith('index ')
        ? 'hdr'
        : line.startsWith('@@')
          ? 'hunk'
          : line.startsWith('+')
            ? 'add'
            : line.startsWith('-')
              ? 'del'
              : 'ctx';
    return `<span class="${cls}">${escapeHtml(line)}</span>`;
  });
  return `<pre class="diff">${lines.join('\n')}</pre>`;
}

/**
 * The runs around this one: the run that dispatched it, and those it dispatched, each with the
 * signed link of its transcript page (`href`, relative: session pages are siblings, /sessions/<id>?…).
 */
export interface RunFamily {
  parent: { href: string; title: string } | null;
  children: (Pick<ChildRunStatus, 'runId' | 'agent' | 'title' | 'state'> & { href: string })[];
}

/** A link to another run's transcript. */
function runLink(run: { href: string; title: string; runId?: string }): string {
  return `<a href="${escapeHtml(run.href)}"${run.runId ? ` data-child-run="${escapeHtml(run.runId)}"` : ''}>${escapeHtml(run.title)}</a>`;
}

function childLine(child: RunFamily['children'][number]): string {
  return `${runLink(child)} · ${child.agent ? `${escapeHtml(child.agent)} · ` : ''}<strong>${escapeHtml(child.state)}</strong>`;
}

/** One transcript event as HTML: the page renders its events with it, and the live stream sends each new one so. */
export function renderTranscriptEvent(event: StoredRunEvent, family: RunFamily): string {
  const p = event.payload;
  const time = `<span class="meta">${escapeHtml(event.createdAt.toISOString())}</span>`;
  const block = (label: string, content: string, extra = '') =>
    `<section class="event ${escapeHtml(event.kind)}${extra}" id="event-${escapeHtml(event.id)}" data-kind="${escapeHtml(event.kind)}"><div class="kind">${label} ${time}</div>${content}</section>`;
  switch (event.kind) {
    case 'prompt':
      return block(
        'Prompt',
        `${p.base_prompt ? `<details><summary>Base prompt</summary>${pre(p.base_prompt)}</details>` : ''}${pre(p.text)}`,
      );
    case 'followup':
      return block(`Follow-up #${escapeHtml(p.seq)} (${escapeHtml(p.mode)})`, pre(p.message));
    case 'assistant': {
      const calls = (p.tool_calls as { name: string }[] | undefined) ?? [];
      const asks = calls.length
        ? `<p class="meta">Asks for: ${calls.map((c) => `<code>${escapeHtml(c.name)}</code>`).join(', ')}</p>`
        : '';
      // A CLI harness reports its tokens per invocation, not per message: no count then.
      const tokens = typeof p.total_tokens === 'number' ? ` · ${escapeHtml(p.total_tokens)} tokens` : '';
      return block(`Agent · ${escapeHtml(p.model_id)}${tokens}`, (p.text ? pre(p.text) : '') + asks);
    }
    case 'tool_call': {
      const input = p.input as Record<string, unknown>;
      const isCommand = p.name === 'run_command';
      const head = isCommand
        ? `<div class="command"><span class="prompt">$</span> <code>${escapeHtml(input.command)}</code></div>`
        : `<details><summary>Input</summary>${pre(JSON.stringify(input, null, 2))}</details>`;
      const status =
        p.exit_code !== undefined || p.duration_ms !== undefined
          ? `<p class="meta">${p.timed_out ? 'timed out' : `exit code <strong class="exit">${escapeHtml(p.exit_code)}</strong>`} · ${escapeHtml(p.duration_ms)} ms</p>`
          : '';
      const output = String(p.full_output ?? p.output ?? '');
      const child = family.children.find((c) => c.runId === p.child_run_id);
      const childNote = child ? `<p class="meta">Child run: ${childLine(child)}</p>` : '';
      return block(
        `Tool · <code>${escapeHtml(p.name)}</code>${p.interrupted ? ' · <span class="err">interrupted, outcome unknown</span>' : p.is_error ? ' · <span class="err">error</span>' : ''}`,
        head + status + childNote + folded('Output', output),
        p.is_error ? ' failed' : '',
      );
    }
    case 'command':
      return block(
        `Setup command · exit code ${escapeHtml(p.exit_code)} · ${escapeHtml(p.duration_ms)} ms`,
        `<div class="command"><span class="prompt">$</span> <code>${escapeHtml(p.command)}</code></div>${folded('Output', String(p.output ?? ''))}`,
        p.exit_code === 0 ? '' : ' failed',
      );
    case 'files_changed': {
      const files = (p.files as { repo: string; path: string; diff: string }[]) ?? [];
      return block(
        `Files changed · ${files.length}`,
        files
          .map(
            (f) =>
              `<div class="file"><div class="path">${escapeHtml(f.repo === '.' ? f.path : `${f.repo}/${f.path}`)}</div>${renderDiff(f.diff)}</div>`,
          )
          .join(''),
      );
    }
    case 'skill_load':
      return block('Skill loaded', `<p><code>${escapeHtml(p.name)}</code> ${escapeHtml(JSON.stringify(p.input))}</p>`);
    case 'state': {
      // A SUCCEEDED run's status message is the agent's answer, which the page shows already.
      const status =
        p.state === 'SUCCEEDED'
          ? undefined
          : (p.status_message as { message?: string; error_code?: string } | undefined);
      const detail = status ? pre(`${status.error_code ? `[${status.error_code}] ` : ''}${status.message ?? ''}`) : '';
      return block(`State → <strong>${escapeHtml(p.state)}</strong>`, detail);
    }
    case 'tool_call_started':
      // Its result (or the note that it was interrupted) follows as the tool call itself.
      return '';
    case 'config':
      return block('Configuration', `<details><summary>Resolved</summary>${pre(JSON.stringify(p, null, 2))}</details>`);
    default:
      return block(escapeHtml(event.kind), pre(p.message ?? JSON.stringify(p)));
  }
}

/**
 * The model a run works with: for a coding-agent CLI, the one its transcript names (the CLI says
 * which it used, `claude/…`), else the harness's configured one; the configured model otherwise.
 */
function modelOf(run: Run, events: StoredRunEvent[]): string {
  const harness = run.config.harness;
  if (!harness?.type || harness.type === 'oz') return run.modelId;
  const named = events.findLast((e) => e.kind === 'assistant' && typeof e.payload.model_id === 'string');
  return named ? String(named.payload.model_id) : `${harness.type}/${harness.model_id || 'default'}`;
}

/** One page of a transcript: its events in order, and whether events lie before and after it. */
export interface TranscriptPage {
  events: StoredRunEvent[];
  earlier: boolean;
  later: boolean;
  /** Follow-ups the agent has not seen yet; only the page that ends with the newest events has them. */
  pending: PendingFollowup[];
  /** The event id the page starts after, for a page that shows no events ('0': from the first). */
  startAfter: string;
}

/** `access`: the signed query of this page's link, which every link to another of its pages carries. */
function navigation(sessionId: string, transcript: TranscriptPage, access: string): string {
  const first = transcript.events[0];
  const last = transcript.events[transcript.events.length - 1];
  const link = (href: string, label: string, rel: string) => `<a href="${escapeHtml(href)}" rel="${rel}">${label}</a>`;
  const links = [
    transcript.earlier ? link(`?after=0&${access}`, '« First events', 'first') : '',
    transcript.earlier && first ? link(`?before=${first.id}&${access}`, '‹ Earlier events', 'prev') : '',
    transcript.later && last ? link(`?after=${last.id}&${access}`, 'Later events ›', 'next') : '',
    // Relative to /sessions/, so that it works behind a proxy that adds a path prefix too.
    transcript.later ? link(`${sessionId}?${access}`, 'Newest events »', 'last') : '',
  ].filter(Boolean);
  return links.length ? `<nav class="pages">${links.join(' · ')}</nav>` : '';
}

/**
 * A page of the transcript behind `session_link`, escaped. The page that ends with the newest
 * events follows the run live: its script appends what the session's event stream sends.
 * `access` is the signed query (`expires=…&signature=…`) of the link it was opened with: its
 * other pages and its event stream open with it too, until the same moment.
 */
export function renderSessionPage(
  run: Run,
  transcript: TranscriptPage,
  family: RunFamily,
  stream: { kinds: readonly string[] },
  access: string,
): string {
  const following = !transcript.later;
  const live = following && !isTerminal(run.state);
  const header = `<h1>${escapeHtml(run.title)}</h1>
<p class="meta">Run <code>${escapeHtml(run.runId)}</code> · state <strong id="state">${escapeHtml(run.state)}</strong>
· model ${escapeHtml(modelOf(run, transcript.events))} · ${escapeHtml(run.totalTokens)} tokens · created ${escapeHtml(run.createdAt.toISOString())} by ${escapeHtml(run.creatorDisplayName)}
${live ? ' · <span id="live">live</span>' : ''}</p>
<p class="meta"><a href="../console/runs/${escapeHtml(run.runId)}">Open in the console</a> (to follow up, cancel or fork; needs an API key)</p>
${family.parent ? `<p class="meta">Dispatched by ${runLink(family.parent)}</p>` : ''}${
    family.children.length
      ? `<details class="children" open><summary>Child runs (${family.children.length})</summary><ul>${family.children
          .map((c) => `<li>${childLine(c)}</li>`)
          .join('')}</ul></details>`
      : ''
  }`;
  // Recorded follow-ups the agent has not seen yet: they join when the run next steps (or continues).
  const waiting = transcript.pending
    .map(
      (f) =>
        `<section class="event followup pending" data-kind="pending_followup" data-seq="${escapeHtml(f.seq)}"><div class="kind">Follow-up #${escapeHtml(f.seq)} (${escapeHtml(f.mode)}) · pending: delivered when the run continues <span class="meta">${escapeHtml(f.createdAt.toISOString())}</span></div>${pre(f.message)}</section>`,
    )
    .join('\n');
  // Where live events go, and the stream they come from (relative to /sessions/, like the links).
  const last = transcript.events[transcript.events.length - 1];
  const marker = following
    ? `<div id="stream" hidden data-src="${escapeHtml(`${run.sessionId}/events?${access}`)}" data-after="${escapeHtml(last?.id ?? transcript.startAfter)}" data-kinds="${escapeHtml(stream.kinds.join(' '))}"></div>`
    : '';
  const nav = navigation(run.sessionId, transcript, access);
  return page(
    `${run.title} · transcript`,
    header + nav + transcript.events.map((e) => renderTranscriptEvent(e, family)).join('\n') + marker + waiting + nav,
    { script: following ? 'live.js' : undefined },
  );
}
