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
      if (!have[a.dataset.id]) {
        list.appendChild(document.importNode(a, true));
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

  function refresh() {
    fetch('/console/pending', { credentials: 'same-origin', redirect: 'error' })
      .then(function (r) {
        if (r.status !== 200) { throw new Error('status ' + r.status); }
        return r.text();
      })
      .then(merge)
      .catch(function () { window.location.assign('/console/login'); });
  }

  if (list && window.EventSource) {
    var es = new EventSource('/console/events');
    es.addEventListener('pending', refresh);
    es.addEventListener('logout', function () { es.close(); window.location.assign('/console/login'); });
  }

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
