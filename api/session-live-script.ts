/**
 * The transcript page's script (served from /sessions/live.js: the page allows scripts from
 * 'self' only). It follows the run through the session's event stream and inserts each event's
 * HTML, which the server renders with the same function as the page, before the `#stream`
 * marker; it keeps the state in the header current and drops a pending follow-up once delivered.
 * After a dropped connection it reconnects from the last event it showed.
 */
export const SESSION_LIVE_SCRIPT = `(function () {
  'use strict';
  var mark = document.getElementById('stream');
  if (!mark || typeof EventSource !== 'function') return;
  var src = mark.getAttribute('data-src');
  var after = mark.getAttribute('data-after') || '0';
  var kinds = (mark.getAttribute('data-kinds') || '').split(' ');
  var terminal = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];
  var source = null;
  var delay = 3000;

  function newer(id) {
    return id.length !== after.length ? id.length > after.length : id > after;
  }
  function showState(state) {
    var el = document.getElementById('state');
    if (el) el.textContent = state;
    var live = document.getElementById('live');
    if (terminal.indexOf(state) >= 0) {
      if (live) live.remove();
    } else if (!live && el) {
      live = document.createElement('span');
      live.id = 'live';
      live.textContent = 'live';
      el.parentNode.appendChild(live);
    }
  }
  function onEvent(e) {
    var data = JSON.parse(e.data);
    if (!newer(String(data.id))) return;
    after = String(data.id);
    delay = 3000;
    if (data.html) mark.insertAdjacentHTML('beforebegin', data.html);
    if (data.kind === 'state') showState(data.payload.state);
    if (data.kind === 'followup') {
      var pending = document.querySelector('[data-kind="pending_followup"][data-seq="' + Number(data.payload.seq) + '"]');
      if (pending) pending.remove();
    }
  }
  function connect() {
    // src carries the page's signed query already.
    source = new EventSource(src + '&after=' + encodeURIComponent(after));
    kinds.forEach(function (kind) {
      if (kind) source.addEventListener(kind, onEvent);
    });
    source.addEventListener('end', function (e) {
      source.close();
      showState(JSON.parse(e.data).state);
    });
    // Reconnect from the last event shown, not from where the page began.
    source.onerror = function () {
      source.close();
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 60000);
    };
  }
  connect();
})();
`;
