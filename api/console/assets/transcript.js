// @ts-check
/**
 * A run's transcript entries as elements, the way the transcript page (api/session-page.ts)
 * shows them: everything a run, a model or a person wrote goes in as text.
 */
import { h } from './api.js';

/** Outputs longer than this many lines are folded behind a <details> toggle. */
const FOLD_LINES = 20;

/** @param {unknown} text @param {string} [className] */
function pre(text, className) {
  return h('pre', className ? { class: className } : {}, String(text ?? ''));
}

/** @param {string} label @param {string} text */
function folded(label, text) {
  const lines = text.replace(/\n$/, '').split('\n').length;
  if (lines <= FOLD_LINES) return pre(text, 'output');
  return h('details', { class: 'fold' }, h('summary', {}, `${label} (${lines} lines)`), pre(text, 'output'));
}

/** @param {string} summary @param {unknown} value */
function json(summary, value) {
  return h('details', {}, h('summary', {}, summary), pre(JSON.stringify(value, null, 2)));
}

/** @param {string} line */
function diffClass(line) {
  if (/^(\+\+\+|---|diff --git|index )/.test(line)) return 'hdr';
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  return 'ctx';
}

/** @param {string} diff */
function renderDiff(diff) {
  if (!diff) return h('p', { class: 'meta' }, 'Change reverted: the file is back to its committed state.');
  return h('pre', { class: 'diff' }, ...diff.split('\n').map((line) => h('span', { class: diffClass(line) }, line)));
}

/** @param {string} command */
function commandLine(command) {
  return h(
    'div',
    { class: 'command' },
    h('span', { class: 'prompt', 'aria-hidden': 'true' }, '$ '),
    h('code', {}, command),
  );
}

/** @param {any} p */
function toolCall(p) {
  const isCommand = p.name === 'run_command';
  const status =
    p.exit_code !== undefined || p.duration_ms !== undefined
      ? h(
          'p',
          { class: 'meta' },
          p.timed_out ? 'timed out' : `exit code ${p.exit_code ?? '—'}`,
          p.duration_ms !== undefined ? ` · ${p.duration_ms} ms` : '',
        )
      : null;
  return [
    isCommand ? commandLine(String(p.input?.command ?? '')) : json('Input', p.input ?? {}),
    status,
    folded('Output', String(p.full_output ?? p.output ?? '')),
  ];
}

/**
 * The label and content of an entry; null for entries shown by another (a started tool call).
 * @param {any} event
 * @returns {{ label: string, content: (Node | string | null)[], failed?: boolean } | null}
 */
function describe(event) {
  const p = event.payload ?? {};
  switch (event.kind) {
    case 'prompt':
      return { label: 'Prompt', content: [p.base_prompt ? json('Base prompt', p.base_prompt) : null, pre(p.text)] };
    case 'followup':
      return { label: `Follow-up #${p.seq} (${p.mode})`, content: [pre(p.message)] };
    case 'assistant': {
      const tokens = typeof p.total_tokens === 'number' ? ` · ${p.total_tokens} tokens` : '';
      const calls = (p.tool_calls ?? []).map((/** @type {any} */ c) => String(c.name));
      return {
        label: `Agent · ${p.model_id ?? ''}${tokens}`,
        content: [
          p.text ? pre(p.text) : null,
          calls.length ? h('p', { class: 'meta' }, `Asks for: ${calls.join(', ')}`) : null,
        ],
      };
    }
    case 'tool_call':
      return {
        label: `Tool · ${p.name}${p.interrupted ? ' · interrupted, outcome unknown' : p.is_error ? ' · error' : ''}`,
        content: toolCall(p),
        failed: Boolean(p.is_error),
      };
    case 'tool_call_started':
      return null;
    case 'command':
      return {
        label: `Setup command · exit code ${p.exit_code ?? '—'} · ${p.duration_ms} ms`,
        content: [commandLine(String(p.command ?? '')), folded('Output', String(p.output ?? ''))],
        failed: p.exit_code !== 0,
      };
    case 'files_changed': {
      const files = p.files ?? [];
      return {
        label: `Files changed · ${files.length}`,
        content: files.map((/** @type {any} */ f) =>
          h(
            'div',
            { class: 'file' },
            h('div', { class: 'path' }, f.repo === '.' ? f.path : `${f.repo}/${f.path}`),
            renderDiff(f.diff ?? ''),
          ),
        ),
      };
    }
    case 'state': {
      const status = p.state === 'SUCCEEDED' ? undefined : p.status_message;
      return {
        label: `State → ${p.state}`,
        content: [status ? pre(`${status.error_code ? `[${status.error_code}] ` : ''}${status.message ?? ''}`) : null],
      };
    }
    case 'skill_load':
      return {
        label: 'Skill loaded',
        content: [h('p', {}, h('code', {}, String(p.name)), ' ', JSON.stringify(p.input))],
      };
    case 'config':
      return { label: 'Configuration', content: [json('Resolved', p)] };
    default:
      return { label: String(event.kind), content: [pre(p.message ?? JSON.stringify(p))] };
  }
}

/**
 * One transcript entry as an <article>, or null for one the transcript does not show.
 * @param {any} event an entry of the run's event stream: `{id, kind, created_at, payload}`
 */
export function renderEvent(event) {
  const shown = describe(event);
  if (!shown) return null;
  const kind = String(event.kind).replace(/[^a-z_]/g, '');
  return h(
    'article',
    { class: `event ${kind}${shown.failed ? ' failed' : ''}`, id: `event-${event.id}`, 'data-kind': kind },
    h(
      'div',
      { class: 'kind' },
      shown.label,
      ' ',
      h('time', { class: 'meta', datetime: event.created_at }, event.created_at),
    ),
    ...shown.content,
  );
}
