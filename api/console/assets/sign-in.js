// @ts-check
/** The sign-in page: checks the key against the API, keeps it in this tab, goes back where the person was. */
import { api, byId, CONSOLE_BASE, keepKey, messageOf, say } from './api.js';

/** Where to go after signing in: a page of the console only (`next` is a path under /console/). */
function nextPage() {
  const next = new URLSearchParams(location.search).get('next') ?? '';
  const safe = /^(runs(\/[0-9a-f-]{36})?|schedules|agents)$/.test(next) ? next : 'runs';
  return new URL(safe, CONSOLE_BASE).href;
}

const form = /** @type {HTMLFormElement} */ (byId('sign-in-form'));
const input = /** @type {HTMLInputElement} */ (byId('api-key'));
const status = byId('sign-in-status');

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = input.value.trim();
  if (!key) return;
  say(status, '');
  try {
    await api('agent/runs?limit=1', { key });
  } catch (err) {
    say(status, `The service refused this key: ${messageOf(err)}`, true);
    input.focus();
    return;
  }
  keepKey(key);
  input.value = '';
  location.assign(nextPage());
});
input.focus();
