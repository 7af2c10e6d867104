import type { StoredRunEvent } from '../../db/run-event-reads';

/**
 * The most of an earlier conversation a recap carries, in bytes (it is a CLI's argument, with
 * the new message, under Linux's 128 KiB); the start is cut first.
 */
export const MAX_RECAP_BYTES = 48 * 1024;

/**
 * What a CLI is told when the session it would resume is gone (its workspace was rebuilt on
 * another worker): the conversation so far as text (the prompts, follow-ups and answers; tool
 * outputs are left to the workspace, which holds their effects), then the new message.
 */
export function sessionRecap(events: Pick<StoredRunEvent, 'kind' | 'payload'>[], message: string): string {
  const said = events.flatMap((e) => {
    if (e.kind === 'prompt') return [`User: ${String(e.payload.text ?? '')}`];
    if (e.kind === 'followup') return [`User: ${String(e.payload.message ?? '')}`];
    if (e.kind === 'assistant' && String(e.payload.text ?? '').trim()) return [`You: ${String(e.payload.text)}`];
    return [];
  });
  let recap = said.join('\n\n');
  if (Buffer.byteLength(recap) > MAX_RECAP_BYTES) {
    while (Buffer.byteLength(recap) > MAX_RECAP_BYTES - 8) recap = recap.slice(Math.ceil(recap.length / 8));
    recap = `[…]${recap}`;
  }
  return [
    '[This conversation continues an earlier session of yours that could not be resumed here. What was said so far:]',
    recap,
    '[The new message:]',
    message,
  ].join('\n\n');
}
