// @ts-check
/**
 * Follows a run's event stream (`GET /api/v1/agent/runs/{runId}/events`). EventSource cannot
 * send an `Authorization` header, and the key must never be in a URL, so the stream is read
 * with fetch and parsed by eventsource-parser (the parser the CLI uses). After a dropped
 * connection it reconnects from the last event it passed on.
 */
import { EventSourceParserStream } from './vendor/eventsource-parser/stream.js';
import { api, API_BASE, currentKey } from './api.js';

const FIRST_RETRY_MS = 2000;
const MAX_RETRY_MS = 30000;

/** @param {string} id @param {string} than */
const isLater = (id, than) => (id.length !== than.length ? id.length > than.length : id > than);

/**
 * @typedef {object} Follow
 * @property {string} runId
 * @property {string} after the id of the last event already shown ('0': none)
 * @property {(event: any) => void} onEvent each event once, in order
 * @property {(end: { state?: string }) => void} onEnd the run ended and its idle window passed
 * @property {(text: string, error?: boolean) => void} onStatus
 */

/** Follows the run until it ends or `stop()`; returns `stop`. @param {Follow} follow */
export function followRun({ runId, after: shown, onEvent, onEnd, onStatus }) {
  let after = shown;
  let retryMs = FIRST_RETRY_MS;
  const controller = new AbortController();

  async function connect() {
    const response = await fetch(new URL(`agent/runs/${encodeURIComponent(runId)}/events?after=${after}`, API_BASE), {
      headers: { Authorization: `Bearer ${currentKey()}`, Accept: 'text/event-stream' },
      cache: 'no-store',
      credentials: 'omit',
      signal: controller.signal,
    });
    // A refusal says why (and a refused key signs the person out) through the usual call.
    if (!response.ok || !response.body) return api(`agent/runs/${encodeURIComponent(runId)}`).then(() => 'retry');
    onStatus('Following the run live.');
    const reader = response.body
      .pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream())
      .getReader();
    for (;;) {
      const { value: message, done } = await reader.read();
      if (done) return 'retry';
      if (message.event === 'end') {
        onEnd(JSON.parse(message.data));
        return 'end';
      }
      const event = JSON.parse(message.data);
      const id = String(message.id ?? event.id);
      if (!/^\d+$/.test(id) || !isLater(id, after)) continue;
      after = id;
      retryMs = FIRST_RETRY_MS;
      onEvent(event);
    }
  }

  async function loop() {
    while (!controller.signal.aborted) {
      let outcome = 'retry';
      try {
        outcome = await connect();
      } catch (err) {
        if (controller.signal.aborted) return;
        onStatus(
          `The live transcript was interrupted (${err instanceof Error ? err.message : err}); reconnecting.`,
          true,
        );
      }
      if (outcome === 'end') return;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    }
  }

  void loop();
  return () => controller.abort();
}
