import { isTerminal } from '../core/run-state';
import type { Run } from '../db/entities/run';
import type { StoredRunEvent } from '../db/run-events';
import { escapeHtml, page } from './html';

function renderEvent(event: StoredRunEvent): string {
  const p = event.payload;
  const time = `<span class="meta">${escapeHtml(event.createdAt.toISOString())}</span>`;
  const block = (label: string, content: string) =>
    `<div class="event ${escapeHtml(event.kind)}"><div class="kind">${escapeHtml(label)} ${time}</div>${content}</div>`;
  switch (event.kind) {
    case 'prompt':
      return block(
        'Prompt',
        `${p.base_prompt ? `<details><summary>Base prompt</summary><pre>${escapeHtml(p.base_prompt)}</pre></details>` : ''}<pre>${escapeHtml(p.text)}</pre>`,
      );
    case 'followup':
      return block(`Follow-up #${escapeHtml(p.seq)} (${escapeHtml(p.mode)})`, `<pre>${escapeHtml(p.message)}</pre>`);
    case 'assistant':
      return block(
        `Agent (${escapeHtml(p.model_id)}, ${escapeHtml(p.total_tokens ?? 0)} tokens)`,
        `<pre>${escapeHtml(p.text)}</pre>`,
      );
    case 'state': {
      const status = p.status_message as { message?: string; error_code?: string } | undefined;
      const detail = status
        ? `<pre>${escapeHtml(status.error_code ? `[${status.error_code}] ` : '')}${escapeHtml(status.message)}</pre>`
        : '';
      return block(`State → ${String(p.state)}`, detail);
    }
    case 'config':
      return block('Configuration', `<pre>${escapeHtml(JSON.stringify(p, null, 2))}</pre>`);
    default:
      return block(event.kind, `<pre>${escapeHtml(p.message ?? JSON.stringify(p))}</pre>`);
  }
}

/** The transcript behind `session_link`: every event of the run, in order, escaped. */
export function renderSessionPage(run: Run, events: StoredRunEvent[]): string {
  const header = `<h1>${escapeHtml(run.title)}</h1>
<p class="meta">Run <code>${escapeHtml(run.runId)}</code> · state <strong id="state">${escapeHtml(run.state)}</strong>
· model ${escapeHtml(run.modelId)} · created ${escapeHtml(run.createdAt.toISOString())} by ${escapeHtml(run.creatorDisplayName)}</p>`;
  const live = isTerminal(run.state) ? undefined : 3;
  return page(`${run.title} · transcript`, header + events.map(renderEvent).join('\n'), { refreshSeconds: live });
}
