// @ts-check
/**
 * What every page of the console shares: the signed-in key (this tab's sessionStorage only),
 * calls to the service's public API with it as `Authorization: Bearer`, and the one way the
 * console puts text on a page (`h`: text nodes, never HTML).
 */

const KEY = 'agent-runs-console.api-key';

/** The API and the console, relative to this file, so that a proxy's path prefix is kept. */
export const API_BASE = new URL('../../api/v1/', import.meta.url);
export const CONSOLE_BASE = new URL('../', import.meta.url);

export const TERMINAL = (document.body.dataset.terminal ?? '').split(' ');

/** A failed API call, with the problem document's `detail` as its message. */
export class ApiProblem extends Error {
  /** @param {number} status @param {string} message */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function storedKey() {
  return sessionStorage.getItem(KEY);
}

/** @param {string} key */
export function keepKey(key) {
  sessionStorage.setItem(KEY, key);
}

/** The sign-in page, told where to come back to (a console path, never the key). */
function signInUrl() {
  const here = location.pathname.slice(CONSOLE_BASE.pathname.length);
  const url = new URL('sign-in', CONSOLE_BASE);
  if (here && here !== 'sign-in') url.searchParams.set('next', here);
  return url.href;
}

/**
 * Whether a key is signed in; without one, the page goes to the sign-in page (and its module
 * starts nothing). With one, the "Sign out" button forgets it.
 */
export function signedIn() {
  if (!storedKey()) {
    location.replace(signInUrl());
    return false;
  }
  const out = document.getElementById('sign-out');
  if (out) {
    out.hidden = false;
    out.addEventListener('click', () => {
      sessionStorage.removeItem(KEY);
      location.assign(new URL('sign-in', CONSOLE_BASE).href);
    });
  }
  return true;
}

/** The signed-in key, for a call of the API; without one (signed out in another page of the tab), to the sign-in page. */
export function currentKey() {
  const key = storedKey();
  if (key) return key;
  location.assign(signInUrl());
  throw new ApiProblem(401, 'Not signed in.');
}

/**
 * Calls the API with the signed-in key (or `key`); JSON in and out. A key the API refuses
 * (401) is forgotten and the person is sent to sign in again.
 * @param {string} path relative to /api/v1/, e.g. `agent/runs?limit=20`
 * @param {{ method?: string, body?: unknown, key?: string, signal?: AbortSignal }} [options]
 * @returns {Promise<any>}
 */
export async function api(path, options = {}) {
  const key = options.key ?? currentKey();
  /** @type {Record<string, string>} */
  const headers = { Authorization: `Bearer ${key}`, Accept: 'application/json' };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(new URL(path, API_BASE), {
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: options.signal,
    cache: 'no-store',
    credentials: 'omit',
  });
  if (response.status === 401 && !options.key) {
    sessionStorage.removeItem(KEY);
    location.assign(signInUrl());
  }
  if (!response.ok) throw new ApiProblem(response.status, await problemText(response));
  const type = response.headers.get('content-type') ?? '';
  return type.includes('json') ? response.json() : response.text();
}

/** @param {Response} response */
async function problemText(response) {
  try {
    const problem = await response.json();
    return String(problem.detail ?? problem.error ?? response.statusText);
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

/**
 * An element with attributes and children; strings become text nodes, so nothing given here
 * is ever parsed as HTML. `null`, `undefined` and `false` children are skipped.
 * @param {string} tag
 * @param {Record<string, string | boolean | undefined | null>} [attributes]
 * @param {...(Node | string | number | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attributes = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== undefined && value !== null) el.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
  return el;
}

/** A link only to an http(s) address: a run's data may name any scheme. @param {unknown} url */
export function safeHref(url) {
  try {
    const parsed = new URL(String(url), location.href);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

/** The console's page of a run. @param {string} runId */
export function runHref(runId) {
  return new URL(`runs/${encodeURIComponent(runId)}`, CONSOLE_BASE).href;
}

/** "3 min ago", with the exact time in a <time> element. @param {string | undefined} iso */
export function age(iso) {
  if (!iso) return h('span', {}, '—');
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  const [value, unit] =
    seconds < 60
      ? [seconds, 's']
      : seconds < 3600
        ? [Math.floor(seconds / 60), 'min']
        : seconds < 86400
          ? [Math.floor(seconds / 3600), 'h']
          : [Math.floor(seconds / 86400), 'd'];
  return h('time', { datetime: iso, title: iso }, `${value} ${unit} ago`);
}

/**
 * An ISO 8601 duration as the API gives run times (`PT1H2M3.5S`) read as people do: "1 h 2 min 3.5 s",
 * in a <time> element that keeps the exact value. @param {string} iso
 */
export function duration(iso) {
  const parts = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(iso);
  if (!parts) return h('span', {}, iso);
  const [, hours, minutes, seconds] = parts;
  const text = [hours && `${hours} h`, minutes && `${minutes} min`, seconds && `${seconds} s`]
    .filter(Boolean)
    .join(' ');
  return h('time', { datetime: iso, title: iso }, text || '0 s');
}

/** A state as a badge (its colour from the style sheet). @param {string} state */
export function stateBadge(state) {
  return h('span', { class: `badge state-${state.toLowerCase()}` }, state);
}

/** Puts `text` in a status line (`role="status"` or `alert`), marked as an error or not. @param {HTMLElement | null} el @param {string} text @param {boolean} [error] */
export function say(el, text, error = false) {
  if (!el) return;
  el.textContent = text;
  el.classList.toggle('error', error);
  el.hidden = !text;
}

/** @param {unknown} err */
export function messageOf(err) {
  return err instanceof Error ? err.message : String(err);
}

/** Runs `task` every `ms` while the tab is visible, and at once when it becomes visible again. @param {() => Promise<void>} task @param {number} ms */
export function every(task, ms) {
  let running = false;
  const tick = async () => {
    if (running || document.hidden) return;
    running = true;
    try {
      await task();
    } finally {
      running = false;
    }
  };
  setInterval(() => void tick(), ms);
  document.addEventListener('visibilitychange', () => void tick());
}

/** The element with this id, which the page's shell has. @param {string} id @returns {any} */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`The page has no #${id}.`);
  return el;
}
