/** The live view's page: static HTML + a little script that renders the SSE snapshots. */
export const LIVE_VIEW_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Distributed locks: live view</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d232a;background:#f7f8fa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:20px 0 6px}
table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px #0002}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #e4e7eb;font-variant-numeric:tabular-nums}
th{background:#eef1f5;font-weight:600}td.empty{color:#8a94a0;font-style:italic}
.status{color:#5b6670}.ok{color:#1a7f37}.bad{color:#b42318}
.t-acquired{color:#1a7f37}.t-released{color:#5b6670}.t-lost,.t-backendUnavailable,.t-releaseFailed,.t-renewFailed{color:#b42318}
.t-busy,.t-skipped,.t-forceReleased{color:#9a6700}
code{font:12px ui-monospace,monospace}
</style></head><body>
<h1>Distributed locks</h1>
<div class="status" id="status">connecting...</div>
<h2>Held by this process</h2>
<table id="held"><thead><tr><th>Key</th><th>Backend</th><th>Mode</th><th>Fencing token</th><th>Held for</th><th>Holds</th></tr></thead><tbody></tbody></table>
<h2>Held on the backends (all processes)</h2>
<table id="backends"><thead><tr><th>Backend</th><th>Held keys</th></tr></thead><tbody></tbody></table>
<h2>Waiting</h2>
<table id="waiting"><thead><tr><th>Key</th><th>Backend</th><th>Waiters</th></tr></thead><tbody></tbody></table>
<h2>Recent events</h2>
<table id="events"><thead><tr><th>Time</th><th>Event</th><th>Key</th><th>Details</th></tr></thead><tbody></tbody></table>
<script>
(function () {
  var base = location.pathname.replace(/\\/$/, '');
  var last = null, skew = 0;
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; }); }
  function rows(id, items, cols, cells) {
    var body = document.querySelector('#' + id + ' tbody');
    body.innerHTML = items.length ? items.map(function (it) { return '<tr>' + cells(it).map(function (c) { return '<td>' + c + '</td>'; }).join('') + '</tr>'; }).join('')
      : '<tr><td class="empty" colspan="' + cols + '">none</td></tr>';
  }
  function details(e) {
    var skip = { type: 1, at: 1, key: 1, backend: 1, keyTemplate: 1 };
    return Object.keys(e).filter(function (k) { return !skip[k] && e[k] !== undefined; }).map(function (k) { return k + '=' + esc(e[k]); }).join(' ');
  }
  function render() {
    if (!last) return;
    var now = Date.now() - skew;
    rows('held', last.held, 6, function (l) { return ['<code>' + esc(l.key) + '</code>', esc(l.backend), esc(l.mode), esc(l.fencingToken), Math.max(0, Math.round((now - l.since) / 1000)) + ' s', esc(l.holds)]; });
    rows('backends', last.backends || [], 2, function (b) { return [esc(b.backend), b.note ? '<span class="status">' + esc(b.note) + '</span>' : (b.keys.length ? b.keys.map(function (k) { return '<code>' + esc(k) + '</code>'; }).join(' ') + (b.more ? ' ...' : '') : '<span class="status">none</span>')]; });
    rows('waiting', last.waiting, 3, function (w) { return ['<code>' + esc(w.key) + '</code>', esc(w.backend), esc(w.waiters)]; });
    rows('events', last.recent, 4, function (e) { return [new Date(e.at).toLocaleTimeString(), '<span class="t-' + esc(e.type) + '">' + esc(e.type) + '</span>', '<code>' + esc(e.key || e.backend) + '</code>', details(e)]; });
  }
  var status = document.getElementById('status');
  var source = new EventSource(base + '/events');
  source.onopen = function () { status.innerHTML = '<span class="ok">live</span> (updates over server-sent events)'; };
  source.onerror = function () { status.innerHTML = '<span class="bad">disconnected</span>, retrying...'; };
  source.onmessage = function (m) { last = JSON.parse(m.data); skew = Date.now() - last.now; render(); document.body.setAttribute('data-updates', String(Number(document.body.getAttribute('data-updates') || 0) + 1)); };
  setInterval(render, 1000);
})();
</script></body></html>`;
