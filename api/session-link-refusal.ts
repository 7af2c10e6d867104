import type { SignatureCheck } from '../core/signed-urls';
import { escapeHtml, page } from './html';

export type SessionLinkRefusal = Extract<SignatureCheck, { ok: false }>;

function why(refusal: SessionLinkRefusal): string {
  if (refusal.reason === 'expired') return `This transcript link expired at ${refusal.expiresAt!.toISOString()}.`;
  if (refusal.reason === 'malformed') {
    return 'This transcript link is incomplete: a transcript opens only with the `expires` and `signature` of the link the API gave.';
  }
  return 'This transcript link is not valid: its signature does not match (the link was altered or cut short).';
}

function lifetime(ttlSeconds: number): string {
  if (ttlSeconds % 3600 === 0) return `${ttlSeconds / 3600} hour${ttlSeconds === 3600 ? '' : 's'}`;
  if (ttlSeconds % 60 === 0) return `${ttlSeconds / 60} minutes`;
  return `${ttlSeconds} seconds`;
}

/**
 * Why a transcript link opens nothing and how to get one that does. Decided before any session is
 * looked up: a session that does not exist and one of another team are refused alike.
 */
export function sessionLinkRefusal(refusal: SessionLinkRefusal, ttlSeconds: number): string {
  return `${why(refusal)} Get a fresh link by reading the run again with an API key of its team (\`GET /api/v1/agent/runs/{run_id}\`, or \`agent-runs get <run_id>\`): every read signs its \`session_link\` anew, and a link works for ${lifetime(ttlSeconds)} (SESSION_LINK_TTL_SECONDS).`;
}

/** The page a browser shows for a transcript link that opens nothing (no transcript, no script). */
export function renderSessionLinkRefused(refusal: SessionLinkRefusal, ttlSeconds: number): string {
  const title = refusal.reason === 'expired' ? 'This transcript link has expired' : 'This transcript link is not valid';
  // `code` spans for what the text quotes between backticks.
  const text = escapeHtml(sessionLinkRefusal(refusal, ttlSeconds)).replace(/`([^`]*)`/g, '<code>$1</code>');
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p>${text}</p>`);
}
