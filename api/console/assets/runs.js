// @ts-check
/**
 * The runs list: the team's runs, newest first, filtered by state and text (the list API's
 * `state` and `q`), read again every few seconds while the tab is visible. The filters are in
 * the page's address, so a filtered list can be linked to.
 */
import { age, api, byId, every, h, messageOf, runHref, say, signedIn, stateBadge } from './api.js';

const PAGE = 50;
const POLL_MS = 4000;

const form = /** @type {HTMLFormElement} */ (byId('filters'));
const stateInput = /** @type {HTMLSelectElement} */ (byId('filter-state'));
const textInput = /** @type {HTMLInputElement} */ (byId('filter-q'));
const body = byId('runs').querySelector('tbody');
const more = /** @type {HTMLButtonElement} */ (byId('more'));
const status = byId('runs-status');

const params = new URLSearchParams(location.search);
stateInput.value = params.get('state') ?? '';
textInput.value = params.get('q') ?? '';

/** The newest page, read again on each poll, and the older pages the person asked for. */
let newest = /** @type {any[]} */ ([]);
let older = /** @type {any[]} */ ([]);
let nextCursor = /** @type {string | undefined} */ (undefined);
let olderCursor = /** @type {string | undefined} */ (undefined);

function query(cursor = '') {
  const q = new URLSearchParams({ sort_by: 'created_at', sort_order: 'desc', limit: String(PAGE) });
  if (stateInput.value) q.set('state', stateInput.value);
  if (textInput.value.trim()) q.set('q', textInput.value.trim());
  if (cursor) q.set('cursor', cursor);
  return `agent/runs?${q}`;
}

/** @param {any} run */
function row(run) {
  const creator = run.creator?.display_name || run.creator?.uid || '';
  return h(
    'tr',
    { 'data-run-id': run.run_id },
    h('td', { 'data-label': 'State' }, stateBadge(run.state)),
    h('td', { 'data-label': 'Title' }, h('a', { href: runHref(run.run_id) }, run.title || run.run_id)),
    h('td', { 'data-label': 'Creator' }, creator),
    h('td', { 'data-label': 'Age' }, age(run.created_at)),
  );
}

function render() {
  // A link that had the keyboard's focus keeps it across the refresh.
  const focused = document.activeElement?.closest('tr')?.getAttribute('data-run-id');
  const seen = new Set(newest.map((r) => r.run_id));
  const runs = [...newest, ...older.filter((r) => !seen.has(r.run_id))];
  body.replaceChildren(...runs.map(row));
  if (focused) body.querySelector(`tr[data-run-id="${CSS.escape(focused)}"] a`)?.focus();
  more.hidden = !(older.length ? olderCursor : nextCursor);
  say(status, runs.length ? `${runs.length} runs` : 'No runs match.');
}

async function refresh() {
  try {
    const page = await api(query());
    newest = page.runs;
    nextCursor = page.page_info?.next_cursor;
    render();
  } catch (err) {
    say(status, `Could not read the runs: ${messageOf(err)}`, true);
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const shown = new URLSearchParams();
  if (stateInput.value) shown.set('state', stateInput.value);
  if (textInput.value.trim()) shown.set('q', textInput.value.trim());
  history.replaceState(null, '', shown.size ? `?${shown}` : location.pathname);
  older = [];
  olderCursor = undefined;
  void refresh();
});
stateInput.addEventListener('change', () => form.requestSubmit());

more.addEventListener('click', async () => {
  try {
    const page = await api(query(older.length ? olderCursor : nextCursor));
    older = [...older, ...page.runs];
    olderCursor = page.page_info?.next_cursor;
    render();
  } catch (err) {
    say(status, `Could not read older runs: ${messageOf(err)}`, true);
  }
});

if (signedIn()) {
  void refresh();
  every(refresh, POLL_MS);
}
