import { RUN_STATES, TERMINAL_STATES } from '../../core/run-state';
import { escapeHtml } from '../html';

/**
 * The web console's pages: server-rendered shells with the page's headings, landmarks and
 * labelled controls, and one ES module of the console (served from /console/assets/) that
 * fills them from the public API with the key of the tab's sessionStorage. Nothing a run, a
 * model or a user wrote is in these shells: the modules insert it as text.
 *
 * Links are relative (`base`: from the page to /console/), so the console works behind a proxy
 * that serves the service under a path prefix.
 */

/** The states a run list can be filtered by: the service's, and BLOCKED (a run waiting for an approval). */
const FILTER_STATES = [...new Set<string>([...RUN_STATES, 'BLOCKED'])];

interface Shell {
  title: string;
  /** The page's module, under assets/. */
  script: string;
  /** From the page's URL to /console/: '' for /console/x, '../' for /console/runs/x. */
  base: string;
  main: string;
  /** Which nav entry is the current page. */
  current?: 'runs' | 'schedules' | 'agents';
  /** data-* attributes of <body> the module reads (values escaped here). */
  data?: Record<string, string>;
}

function nav(base: string, current: Shell['current']): string {
  const item = (href: string, name: string, key: Shell['current']) =>
    `<li><a href="${base}${href}"${current === key ? ' aria-current="page"' : ''}>${name}</a></li>`;
  return `<header class="top"><a class="brand" href="${base}runs">Agent runs</a>
<nav aria-label="Console"><ul>${item('runs', 'Runs', 'runs')}${item('schedules', 'Schedules', 'schedules')}${item('agents', 'Agents', 'agents')}</ul></nav>
<button type="button" id="sign-out" class="quiet" hidden>Sign out</button></header>`;
}

function shell({ title, script, base, main, current, data = {} }: Shell): string {
  const attributes = Object.entries({ ...data, terminal: TERMINAL_STATES.join(' ') })
    .map(([name, value]) => ` data-${name}="${escapeHtml(value)}"`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)} · Agent runs console</title>
<link rel="stylesheet" href="${base}assets/console.css">
<script type="module" src="${base}assets/${script}"></script>
</head><body${attributes}><a class="skip" href="#main">Skip to content</a>
${nav(base, current)}
<main id="main" tabindex="-1">${main}</main></body></html>`;
}

/** `/console/sign-in`: the key goes into this tab's sessionStorage, never into a URL or a cookie. */
export function signInPage(): string {
  return shell({
    title: 'Sign in',
    script: 'sign-in.js',
    base: '',
    main: `<h1>Sign in</h1>
<p>Paste an API key of your team (<code>npm run keys -- create</code> makes one). It stays in this tab only, and is sent to the service's API as <code>Authorization: Bearer</code>.</p>
<form id="sign-in-form" method="post" class="stack">
<label for="api-key">API key</label>
<input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck="false" required>
<div><button type="submit">Sign in</button></div>
<p id="sign-in-status" role="alert" class="error" hidden></p>
</form>`,
  });
}

/** `/console/runs`: the team's runs, newest first, filtered by state and text, kept current. */
export function runsPage(): string {
  const options = FILTER_STATES.map((s) => `<option value="${s}">${s}</option>`).join('');
  return shell({
    title: 'Runs',
    script: 'runs.js',
    base: '',
    current: 'runs',
    main: `<h1>Runs</h1>
<form id="filters" role="search" class="filters">
<div><label for="filter-state">State</label>
<select id="filter-state" name="state"><option value="">Any state</option>${options}</select></div>
<div class="grow"><label for="filter-q">Search</label>
<input id="filter-q" name="q" type="search" placeholder="Title, prompt or skill"></div>
<div><button type="submit">Filter</button></div>
</form>
<p id="runs-status" role="status" class="meta"></p>
<table id="runs" class="list">
<thead><tr><th scope="col">State</th><th scope="col">Title</th><th scope="col">Creator</th><th scope="col">Age</th></tr></thead>
<tbody></tbody></table>
<p><button type="button" id="more" hidden>Show older runs</button></p>`,
  });
}

/** `/console/runs/{runId}`: one run, its transcript as it happens, and its controls. */
export function runPage(runId: string): string {
  return shell({
    title: 'Run',
    script: 'run.js',
    base: '../',
    current: 'runs',
    data: { 'run-id': runId },
    main: `<h1 id="run-title">Run</h1>
<dl id="facts" class="facts"></dl>
<p id="run-status" role="status" class="meta"></p>
<div class="run-layout">
<aside class="side">
<section id="approval" class="panel attention" aria-labelledby="approval-heading" hidden>
<h2 id="approval-heading">Waiting for your decision</h2>
<div id="approval-request"></div>
<label for="approval-comment">Comment</label>
<textarea id="approval-comment" rows="2"></textarea>
<div class="buttons"><button type="button" id="approve">Approve</button> <button type="button" id="deny" class="danger">Deny</button></div>
</section>
<section class="panel" aria-labelledby="controls-heading">
<h2 id="controls-heading">Steer</h2>
<form id="followup-form" class="stack">
<label for="followup">Follow-up</label>
<textarea id="followup" name="followup" rows="3" required></textarea>
<div class="buttons"><button type="submit" id="send">Send</button></div>
</form>
<div class="buttons"><button type="button" id="interrupt">Interrupt</button> <button type="button" id="cancel" class="danger">Cancel run</button></div>
<p id="action-status" role="status" class="meta"></p>
</section>
<section class="panel" aria-labelledby="artifacts-heading">
<h2 id="artifacts-heading">Artifacts</h2>
<ul id="artifacts" class="plain"></ul>
</section>
<section class="panel" aria-labelledby="checkpoints-heading">
<h2 id="checkpoints-heading">Checkpoints</h2>
<ul id="checkpoints" class="plain"></ul>
</section>
</aside>
<section class="transcript" aria-labelledby="transcript-heading">
<h2 id="transcript-heading">Transcript</h2>
<p id="stream-status" role="status" class="meta"></p>
<div id="transcript"></div>
</section>
</div>`,
  });
}

/** `/console/schedules`: the team's schedules, read-only. */
export function schedulesPage(): string {
  return shell({
    title: 'Schedules',
    script: 'lists.js',
    base: '',
    current: 'schedules',
    data: { list: 'schedules' },
    main: `<h1>Schedules</h1>
<p id="list-status" role="status" class="meta"></p>
<table id="schedules" class="list">
<thead><tr><th scope="col">Name</th><th scope="col">Cron</th><th scope="col">Enabled</th><th scope="col">Next run</th><th scope="col">Last ran</th></tr></thead>
<tbody></tbody></table>`,
  });
}

/** `/console/agents`: the team's agent identities, read-only. */
export function agentsPage(): string {
  return shell({
    title: 'Agents',
    script: 'lists.js',
    base: '',
    current: 'agents',
    data: { list: 'agents' },
    main: `<h1>Agents</h1>
<p id="list-status" role="status" class="meta"></p>
<table id="agents" class="list">
<thead><tr><th scope="col">Name</th><th scope="col">Description</th><th scope="col">Harness</th><th scope="col">Model</th><th scope="col">Created</th></tr></thead>
<tbody></tbody></table>`,
  });
}
