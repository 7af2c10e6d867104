// @ts-check
/**
 * A run's page: its facts, its transcript as it happens (the run's event stream), its
 * artifacts and checkpoints, and the controls that steer it: a follow-up, interrupt, cancel,
 * a decision on a pending approval, a fork from a checkpoint. Every control is a call of the
 * public API with the signed-in key; what the run then does arrives through the stream.
 */
import {
  age,
  api,
  byId,
  duration,
  every,
  h,
  messageOf,
  runHref,
  safeHref,
  say,
  signedIn,
  stateBadge,
  TERMINAL,
} from './api.js';
import { followRun } from './event-stream.js';
import { renderEvent } from './transcript.js';

const POLL_MS = 10000;
const runId = document.body.dataset.runId ?? '';
const runPath = `agent/runs/${encodeURIComponent(runId)}`;

const transcript = byId('transcript');
const actionStatus = byId('action-status');
/** @type {any} */
let run = null;
/** The model the transcript names, for a CLI harness whose configuration names none. */
let harnessModel = '';
/** The last event shown: a stream opened again (after a follow-up to an ended run) goes on from it. */
let lastEventId = '0';

/** @param {string} label @param {Node | string} value */
const fact = (label, value) => [h('dt', {}, label), h('dd', {}, value)];

/** `claude/<model>` for a Claude Code run, the configured model for the service's own agent. @param {any} r */
function modelOf(r) {
  const harness = r.agent_config?.harness;
  if (!harness?.type || harness.type === 'oz') return String(r.agent_config?.model_id ?? '');
  return harness.model_id ? `${harness.type}/${harness.model_id}` : harnessModel || `${harness.type}/default`;
}

function renderFacts() {
  document.title = `${run.title} · Agent runs console`;
  byId('run-title').textContent = run.title;
  const session = safeHref(run.session_link);
  byId('facts').replaceChildren(
    ...fact('State', h('span', { id: 'run-state' }, stateBadge(run.state))),
    ...fact('Model', modelOf(run)),
    ...fact('Creator', run.creator?.display_name || run.creator?.uid || ''),
    ...fact('Created', age(run.created_at)),
    ...fact('Tokens', String(run.request_usage?.total_tokens ?? 0)),
    ...(run.run_time ? fact('Run time', duration(run.run_time)) : []),
    ...(run.forked_from
      ? fact('Forked from', h('a', { href: runHref(run.forked_from.run_id) }, run.forked_from.run_id))
      : []),
    ...(run.parent_run_id ? fact('Parent run', h('a', { href: runHref(run.parent_run_id) }, run.parent_run_id)) : []),
    ...(session ? fact('Transcript page', h('a', { href: session }, 'Open (shareable, expires)')) : []),
  );
  const status = run.status_message?.message && run.state !== 'SUCCEEDED' ? run.status_message.message : '';
  say(byId('run-status'), status, run.state === 'FAILED' || run.state === 'ERROR');
}

function renderControls() {
  byId('interrupt').disabled = run.state !== 'INPROGRESS';
  byId('cancel').disabled = !run.is_run_type_cancellable;
}

/** @param {any} approval */
function approvalRequest(approval) {
  if (approval.kind === 'question')
    return [h('p', {}, 'The agent asks:'), h('pre', {}, String(approval.question ?? ''))];
  const args = approval.arguments ?? {};
  return [
    h('p', {}, 'The agent asks to call ', h('code', {}, String(approval.tool ?? '')), ':'),
    typeof args.command === 'string' ? h('pre', {}, `$ ${args.command}`) : h('pre', {}, JSON.stringify(args, null, 2)),
    approval.expires_at ? h('p', { class: 'meta' }, `Denied as timed out at ${approval.expires_at}.`) : null,
  ];
}

function renderApproval() {
  const section = byId('approval');
  const approval = run.pending_approval;
  section.hidden = !approval;
  if (!approval) return;
  if (section.dataset.approvalId === approval.approval_id) return;
  section.dataset.approvalId = approval.approval_id;
  byId('approval-request').replaceChildren(...approvalRequest(approval));
}

/** @param {HTMLButtonElement} button @param {() => Promise<unknown>} load */
function downloadButton(button, load) {
  button.addEventListener('click', async () => {
    try {
      const url = safeHref(await load());
      if (url) location.assign(url);
    } catch (err) {
      say(actionStatus, `Could not download: ${messageOf(err)}`, true);
    }
  });
  return button;
}

/** @param {any} artifact @param {number} i */
function artifactItem(artifact, i) {
  const data = artifact.data ?? {};
  const id = `artifact-${i}`;
  if (artifact.artifact_type !== 'FILE') {
    const href = safeHref(data.url);
    const name = data.title || data.url || artifact.artifact_type;
    return h(
      'li',
      {},
      href ? h('a', { href, rel: 'noreferrer' }, name) : name,
      h('span', { class: 'meta' }, ` ${artifact.artifact_type}`),
    );
  }
  const button = h('button', { type: 'button', class: 'quiet', 'aria-describedby': id }, 'Download');
  const load = () => api(`agent/artifacts/${encodeURIComponent(data.artifact_uid)}`).then((a) => a.data.download_url);
  return h(
    'li',
    {},
    h('span', { id }, data.title || data.filename, h('span', { class: 'meta' }, ` ${data.size_bytes} bytes`)),
    ' ',
    downloadButton(/** @type {HTMLButtonElement} */ (button), load),
  );
}

function renderArtifacts() {
  const artifacts = run.artifacts ?? [];
  byId('artifacts').replaceChildren(
    ...(artifacts.length ? artifacts.map(artifactItem) : [h('li', { class: 'meta' }, 'None yet.')]),
  );
}

/** @param {any} c */
function checkpointItem(c) {
  const id = `checkpoint-${c.checkpoint_id}`;
  const download = h('button', { type: 'button', class: 'quiet', 'aria-describedby': id }, 'Download');
  const fork = h('button', { type: 'button', 'aria-describedby': id }, 'Fork');
  fork.addEventListener('click', () => void forkFrom(c.checkpoint_id, /** @type {HTMLButtonElement} */ (fork)));
  const load = () => api(`${runPath}/checkpoints/${c.checkpoint_id}`).then((item) => item.download_url);
  return h(
    'li',
    { 'data-checkpoint-id': c.checkpoint_id },
    h(
      'span',
      { id },
      `Turn ${c.turn}, step ${c.step}`,
      h('span', { class: 'meta' }, ` · ${c.files} files · `, age(c.created_at)),
    ),
    h('span', { class: 'buttons' }, downloadButton(/** @type {HTMLButtonElement} */ (download), load), ' ', fork),
  );
}

async function loadCheckpoints() {
  const page = await api(`${runPath}/checkpoints`);
  const items = page.checkpoints.map(checkpointItem);
  byId('checkpoints').replaceChildren(...(items.length ? items : [h('li', { class: 'meta' }, 'None yet.')]));
}

async function refresh() {
  try {
    run = await api(runPath);
    renderFacts();
    renderControls();
    renderApproval();
    renderArtifacts();
    await loadCheckpoints();
  } catch (err) {
    say(byId('run-status'), `Could not read the run: ${messageOf(err)}`, true);
  }
}

/** Runs an action of a control, says how it went, and reads the run again. @param {HTMLButtonElement} button @param {string} done @param {() => Promise<unknown>} action */
async function act(button, done, action) {
  button.disabled = true;
  say(actionStatus, '');
  try {
    await action();
    say(actionStatus, done);
  } catch (err) {
    say(actionStatus, messageOf(err), true);
  } finally {
    button.disabled = false;
    await refresh();
  }
}

/** @param {string} checkpointId @param {HTMLButtonElement} button */
async function forkFrom(checkpointId, button) {
  await act(button, 'Forked: opening the new run.', async () => {
    const fork = await api(`${runPath}/fork`, { method: 'POST', body: { checkpoint_id: checkpointId } });
    location.assign(runHref(fork.run_id));
  });
}

function wireControls() {
  const followup = /** @type {HTMLTextAreaElement} */ (byId('followup'));
  byId('followup-form').addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    const message = followup.value.trim();
    if (!message) return;
    void act(byId('send'), 'Follow-up sent.', async () => {
      await api(`${runPath}/followups`, { method: 'POST', body: { message } });
      followup.value = '';
      follow();
    });
  });
  byId('interrupt').addEventListener('click', (/** @type {any} */ e) =>
    act(e.currentTarget, 'Interrupted: the agent stops its step and waits for a follow-up.', () =>
      api(`${runPath}/interrupt`, { method: 'POST', body: {} }),
    ),
  );
  byId('cancel').addEventListener('click', (/** @type {any} */ e) => {
    if (!confirm('Cancel this run? The agent stops, and the run ends CANCELLED.')) return;
    void act(e.currentTarget, 'Cancelled.', () => api(`${runPath}/cancel`, { method: 'POST', body: {} }));
  });
  for (const decision of /** @type {const} */ (['approve', 'deny'])) {
    byId(decision).addEventListener('click', (/** @type {any} */ e) => {
      const comment = /** @type {HTMLTextAreaElement} */ (byId('approval-comment')).value.trim();
      const approvalId = run?.pending_approval?.approval_id;
      void act(e.currentTarget, decision === 'approve' ? 'Approved.' : 'Denied.', () =>
        api(`${runPath}/approvals/${encodeURIComponent(approvalId)}`, {
          method: 'POST',
          body: { decision, ...(comment ? { comment } : {}) },
        }),
      );
    });
  }
}

/** @param {any} event */
function onEvent(event) {
  lastEventId = String(event.id);
  const nearEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  if (event.kind === 'assistant' && typeof event.payload?.model_id === 'string') harnessModel = event.payload.model_id;
  const el = renderEvent(event);
  if (el) {
    transcript.append(el);
    if (nearEnd && transcript.childElementCount > 1) el.scrollIntoView({ block: 'nearest' });
  }
  if (event.kind === 'state' || event.payload?.artifact_uid) void refresh();
}

let stop = /** @type {(() => void) | null} */ (null);
/** Follows the run's stream, unless already following (a follow-up reopens an ended run's stream). */
function follow() {
  if (stop) return;
  const status = byId('stream-status');
  stop = followRun({
    runId,
    after: lastEventId,
    onEvent,
    onStatus: (text, error) => say(status, text, error),
    onEnd: (end) => {
      stop = null;
      say(status, `The run ended ${end.state ?? ''}; a follow-up continues it.`);
      void refresh();
    },
  });
}

if (signedIn()) {
  wireControls();
  void refresh();
  follow();
  every(async () => {
    if (run && !TERMINAL.includes(run.state)) await refresh();
  }, POLL_MS);
}
