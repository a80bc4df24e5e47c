// warden console: live updates of the pending list (server-sent events)
// and keyboard shortcuts. No framework, no build step; loaded from 'self'
// under the console's Content-Security-Policy.
(function () {
  'use strict';

  var list = document.getElementById('pending-list');
  var live = document.getElementById('live');

  function say(msg) {
    if (live) { live.textContent = msg; }
  }

  // merge adds the calls that are new and removes the ones that left,
  // leaving the others untouched (a reason being typed is kept).
  function merge(html) {
    var doc = new DOMParser().parseFromString(html, 'text/html');
    var fresh = doc.getElementById('pending-list');
    if (!fresh) { return; }
    var have = {};
    list.querySelectorAll('article[data-id]').forEach(function (a) { have[a.dataset.id] = a; });
    var keep = {};
    var added = [];
    fresh.querySelectorAll('article[data-id]').forEach(function (a) {
      keep[a.dataset.id] = true;
      // A card being worked on is kept, but who has approved it so far
      // (the two-person rule) is brought up to date.
      var q = have[a.dataset.id] && have[a.dataset.id].querySelector('p.quorum');
      var fq = a.querySelector('p.quorum');
      if (q && fq && q.textContent !== fq.textContent) { q.replaceWith(document.importNode(fq, true)); }
      if (!have[a.dataset.id]) {
        var card = document.importNode(a, true);
        list.appendChild(card);
        armConfirm(card);
        added.push(a.dataset.tool);
      }
    });
    var removed = 0;
    Object.keys(have).forEach(function (id) {
      if (!keep[id]) { have[id].remove(); removed++; }
    });
    var n = list.querySelectorAll('article[data-id]').length;
    list.dataset.count = String(n);
    var empty = document.getElementById('pending-empty');
    if (n === 0 && !empty) {
      empty = document.createElement('p');
      empty.id = 'pending-empty';
      empty.className = 'empty';
      empty.textContent = 'No calls are waiting for approval.';
      list.prepend(empty);
    } else if (n > 0 && empty) {
      empty.remove();
    }
    document.title = (n > 0 ? '(' + n + ') ' : '') + document.title.replace(/^\(\d+\) /, '');
    if (added.length) {
      say('New call waiting for approval: ' + added.join(', ') + '.');
    } else if (removed) {
      say(removed + ' call(s) left the list: decided, timed out or cancelled.');
    }
  }

  // The connection state, never silent: while the event stream is down the
  // page says so and greys the list; when the session is gone (logged out,
  // expired, or the gateway restarted and forgot it) it says "signed out"
  // and hides the calls, which can no longer be decided from this page.
  var conn = document.getElementById('conn');
  var es = null;
  var delay = 1000;        // the next reconnection's wait; doubles up to maxDelay
  var maxDelay = 30000;
  var retry = null;

  function setState(kind, msg) {
    if (!conn) { return; }
    conn.dataset.state = kind || 'live';
    conn.className = 'conn' + (kind ? ' ' + kind : '');
    conn.hidden = !kind;
    conn.textContent = msg || '';
    list.classList.toggle('stale', kind === 'reconnecting');
    list.hidden = kind === 'signedout';
    var empty = document.getElementById('pending-empty');
    if (empty) {
      empty.textContent = kind ? 'Not connected: the calls waiting are unknown.' : 'No calls are waiting for approval.';
    }
  }

  function signedOut(why) {
    if (es) { es.close(); es = null; }
    clearTimeout(retry);
    setState('signedout', why + ' ');
    var a = document.createElement('a');
    a.href = '/console/login';
    a.textContent = 'Log in again';
    conn.appendChild(a);
    document.title = 'Signed out · warden console';
  }

  function lost() {
    if (es) { es.close(); es = null; }
    clearTimeout(retry);
    setState('reconnecting', 'Connection to the gateway lost: this list may be out of date. Reconnecting in ' +
      Math.round(delay / 1000) + ' s…');
    retry = setTimeout(probe, delay);
    delay = Math.min(delay * 2, maxDelay);
  }

  // probe asks for the list: 200 means connected again, 401 signed out.
  function probe() {
    fetch('/console/pending', { credentials: 'same-origin', redirect: 'error' })
      .then(function (r) {
        if (r.status === 401) {
          signedOut('Signed out: your session ended (logged out, expired, or the gateway restarted).');
          return;
        }
        if (r.status !== 200) { throw new Error('status ' + r.status); }
        return r.text().then(function (html) {
          merge(html);
          if (!es) { connect(); }
        });
      })
      .catch(lost);
  }

  function connect() {
    es = new EventSource('/console/events');
    es.addEventListener('open', function () { delay = 1000; setState('', ''); });
    es.addEventListener('pending', probe);
    es.addEventListener('logout', function () { signedOut('Signed out: this session was logged out.'); });
    es.addEventListener('error', lost);
  }

  if (list && window.EventSource) { connect(); }

  // The confirmation gesture of sensitive calls: Approve stays disabled
  // until the first characters of the parameters_hash are typed. The
  // server checks them too; this only keeps the button honest.
  function normal(v) { return v.replace(/\s+/g, '').toLowerCase(); }
  function checkConfirm(field) {
    var form = field.form;
    var ok = normal(field.value) === normal(field.dataset.hashHead || '');
    var btn = form.querySelector('button.approve');
    if (btn && !btn.dataset.voted) { btn.disabled = !ok; }
    var state = document.getElementById(field.getAttribute('aria-describedby'));
    if (state) {
      state.textContent = ok ? 'They match: Approve is enabled.' :
        (field.value ? 'They do not match yet: Approve stays disabled.' : 'Approve stays disabled until they match.');
    }
  }
  function armConfirm(root) {
    root.querySelectorAll('input.confirm').forEach(checkConfirm);
  }
  document.addEventListener('input', function (e) {
    if (e.target && e.target.classList && e.target.classList.contains('confirm')) { checkConfirm(e.target); }
  });
  armConfirm(document);

  // Enter in a field of a decision form never decides (the form's default
  // button is disabled for the same reason, without script).
  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.key === 'Enter' && t && t.tagName === 'INPUT' && t.form && t.form.classList.contains('decide')) {
      e.preventDefault();
    }
  }, true);

  // Shortcuts: j/k move between calls, r goes to the reason field. No key
  // approves or denies on its own.
  function calls() { return Array.prototype.slice.call(document.querySelectorAll('article.call')); }
  function current() {
    var el = document.activeElement;
    return el && el.closest ? el.closest('article.call') : null;
  }
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) { return; }
    var t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) { return; }
    var all = calls();
    if (!all.length) { return; }
    var i = all.indexOf(current());
    if (e.key === 'j' || e.key === 'k') {
      var next = e.key === 'j' ? Math.min(i + 1, all.length - 1) : Math.max(i - 1, 0);
      all[next].focus();
      all[next].scrollIntoView({ block: 'start' });
      e.preventDefault();
    } else if (e.key === 'r') {
      var field = (all[i] || all[0]).querySelector('input[name="reason"]');
      if (field) { field.focus(); e.preventDefault(); }
    }
  });
}());
