import type { RunEventPayloads } from '../core/run-events';
import { headingText, oneLine, terminalSafe, type styler } from './terminal-text';
import type { RunEvent } from './wire';

type Styled = ReturnType<typeof styler>;

/** Lines of untrusted output, indented under their heading (and never starting a line of the log). */
function block(text: string, style?: (line: string) => string): string {
  const body = terminalSafe(text).replace(/\n$/, '');
  if (!body) return '';
  return `${body
    .split('\n')
    .map((line) => `    ${style ? style(line) : line}`)
    .join('\n')}\n`;
}

/** The first `max` lines of `text`, saying how many were left out. */
function head(text: string, max: number): string {
  const lines = text.replace(/\n$/, '').split('\n');
  return lines.length <= max ? text : `${lines.slice(0, max).join('\n')}\n… ${lines.length - max} more lines\n`;
}

function diffLine(s: Styled, line: string): string {
  if (/^(diff --git|index |--- |\+\+\+ )/.test(line)) return s('bold', line);
  if (line.startsWith('@@')) return s('cyan', line);
  if (line.startsWith('+')) return s('green', line);
  if (line.startsWith('-')) return s('red', line);
  return line;
}

function stateColour(state: string): 'green' | 'red' | 'yellow' | 'cyan' {
  return state === 'SUCCEEDED'
    ? 'green'
    : state === 'CANCELLED'
      ? 'yellow'
      : /FAILED|ERROR/.test(state)
        ? 'red'
        : 'cyan';
}

/** A tool's input in one short line: each field, long values cut. */
function inputSummary(input: Record<string, unknown> | undefined): string {
  if (!input) return '';
  return Object.entries(input)
    .map(([name, value]) => `${name}=${oneLine(typeof value === 'string' ? value : JSON.stringify(value), 60)}`)
    .join(' ');
}

function commandStatus(s: Styled, p: { exit_code?: number | null; duration_ms?: number; timed_out?: boolean }) {
  const took = p.duration_ms !== undefined ? ` · ${p.duration_ms} ms` : '';
  if (p.timed_out) return `    ${s('red', `[timed out${took}]`)}\n`;
  if (p.exit_code === undefined && p.duration_ms === undefined) return '';
  const exit = `exit ${p.exit_code ?? '?'}`;
  return `    ${s('dim', '[')}${p.exit_code === 0 ? s('dim', exit) : s('red', exit)}${s('dim', `${took}]`)}\n`;
}

/**
 * One transcript event as text for a terminal or a CI log: state changes, the agent's messages,
 * each command with its output and exit code, diffs (coloured when `s` colours), notices.
 * Returns '' for what is not shown (a tool call about to start: its result follows).
 */
export function renderEvent(event: RunEvent, s: Styled): string {
  const p = event.payload;
  switch (event.kind) {
    case 'prompt': {
      const prompt = p as Partial<RunEventPayloads['prompt']>;
      return `${s('bold', '>>> prompt')}\n${block(String(prompt.text ?? ''))}`;
    }
    case 'followup': {
      const f = p as Partial<RunEventPayloads['followup']>;
      return `${s('bold', `>>> follow-up #${f.seq ?? '?'}${f.mode && f.mode !== 'normal' ? ` (${f.mode})` : ''}`)}\n${block(String(f.message ?? ''))}`;
    }
    case 'assistant': {
      const a = p as Partial<RunEventPayloads['assistant']>;
      const calls = (a.tool_calls ?? []).map((c) => oneLine(String(c.name), 64));
      const meta = [
        oneLine(String(a.model_id ?? ''), 80),
        a.total_tokens !== undefined ? `${a.total_tokens} tokens` : '',
      ]
        .filter(Boolean)
        .join(' · ');
      const text = String(a.text ?? '');
      if (!text.trim() && calls.length === 0) return '';
      const asks = calls.length ? `    ${s('dim', `→ ${calls.join(', ')}`)}\n` : '';
      return `${s('magenta', `--- agent${meta ? ` (${meta})` : ''}`)}\n${block(text)}${asks}`;
    }
    case 'tool_call_started':
      return '';
    case 'tool_call': {
      const t = p as Partial<RunEventPayloads['tool_call']>;
      const output = String(t.full_output ?? t.output ?? '');
      const flag = t.interrupted
        ? `    ${s('red', '[interrupted, outcome unknown]')}\n`
        : t.is_error && t.exit_code === undefined
          ? `    ${s('red', '[error]')}\n`
          : '';
      if (t.name === 'run_command') {
        const command = String((t.input as { command?: unknown } | undefined)?.command ?? '');
        return `${s('bold', `$ ${headingText(command)}`)}\n${block(output)}${commandStatus(s, t)}${flag}`;
      }
      return `${s('blue', `--- ${oneLine(String(t.name ?? 'tool'), 64)}`)} ${s('dim', inputSummary(t.input))}\n${block(head(output, 20))}${flag}`;
    }
    case 'command': {
      const c = p as Partial<RunEventPayloads['command']>;
      return `${s('bold', `$ ${headingText(String(c.command ?? ''))}`)} ${s('dim', '(setup)')}\n${block(String(c.output ?? ''))}${commandStatus(s, c)}`;
    }
    case 'files_changed': {
      const files = (p as Partial<RunEventPayloads['files_changed']>).files ?? [];
      const parts = files.map((f) => {
        const name = oneLine(f.repo === '.' || !f.repo ? f.path : `${f.repo}/${f.path}`, 300);
        const diff = f.diff ? block(f.diff, (line) => diffLine(s, line)) : `    ${s('dim', '(reverted)')}\n`;
        return `  ${s('bold', name)}\n${diff}`;
      });
      return `${s('yellow', `--- files changed (${files.length})`)}\n${parts.join('')}`;
    }
    case 'state': {
      const st = p as Partial<RunEventPayloads['state']>;
      const state = String(st.state ?? '?');
      const status = st.status_message;
      // A SUCCEEDED run's status message is the agent's last answer, shown already.
      const detail =
        status && state !== 'SUCCEEDED'
          ? `: ${status.error_code ? `[${status.error_code}] ` : ''}${headingText(String(status.message ?? ''))}`
          : '';
      return `${s(stateColour(state), s('bold', `=== ${state}`))}${detail}\n`;
    }
    case 'notice': {
      // Emphasis only for what went wrong; an ordinary notice reads like the lines around it.
      const n = p as Partial<RunEventPayloads['notice']>;
      const text = headingText(String(n.message ?? ''));
      return n.level === 'warning' ? `${s('yellow', `!!! ${text}`)}\n` : `${s('dim', '--- note:')} ${text}\n`;
    }
    case 'skill_load':
      return `${s('blue', `--- skill loaded: ${oneLine(String((p as { name?: unknown }).name ?? ''), 100)}`)}\n`;
    case 'config': {
      const c = p as Partial<RunEventPayloads['config']>;
      const parts = [
        c.model_id && `model ${c.model_id}`,
        c.environment_id && `environment ${c.environment_id}`,
        c.skill_spec && `skill ${c.skill_spec}`,
        c.mcp_servers?.length && `MCP ${c.mcp_servers.join(', ')}`,
      ].filter(Boolean);
      return `${s('dim', `--- config: ${oneLine(parts.join(' · '), 300)}`)}\n`;
    }
    case 'pull_request': {
      const r = p as Partial<RunEventPayloads['pull_request']>;
      const what = r.opened
        ? 'opened'
        : `${oneLine(String(r.previous_status ?? '?'), 16)} → ${oneLine(String(r.status ?? '?'), 16)}`;
      return `${s('blue', `--- pull request ${what}:`)} ${oneLine(String(r.url ?? ''), 300)}\n`;
    }
    case 'context_summary': {
      const c = p as Partial<RunEventPayloads['context_summary']>;
      return `${s('dim', `--- context summarised (messages ${c.from_message ?? '?'}–${(c.to_message ?? 1) - 1})`)}\n`;
    }
    default:
      return `${s('dim', `--- ${oneLine(event.kind, 64)}`)}\n${block(JSON.stringify(p, null, 2))}`;
  }
}
