import { cspHash } from './live-view.access';

/** The page's style sheet (inline, allowed by its hash in the CSP). */
const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:20px 24px;color:#1d232a;background:#f4f6f9}
h1{font-size:20px;margin:0 0 2px}h2{font-size:14px;margin:18px 0 6px;text-transform:uppercase;letter-spacing:.04em;color:#4a5561}
table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px #0002;border-radius:6px;overflow:hidden}
th,td{text-align:left;padding:5px 10px;border-bottom:1px solid #e4e7eb;font-variant-numeric:tabular-nums}
th{background:#eef1f5;font-weight:600}td.empty{color:#8a94a0;font-style:italic}
.status{color:#5b6670}.ok{color:#1a7f37}.bad{color:#b42318}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:16px}.card{background:#fff;box-shadow:0 1px 2px #0002;border-radius:6px;padding:8px 10px}
svg text{font:11px ui-monospace,monospace;fill:#1d232a}svg .axis{fill:#8a94a0}
.t-acquired{color:#1a7f37}.t-released{color:#5b6670}.t-lost,.t-backendUnavailable,.t-releaseFailed,.t-renewFailed{color:#b42318}
.t-busy,.t-skipped,.t-forceReleased{color:#9a6700}
code{font:12px ui-monospace,monospace}input{font:13px system-ui;padding:3px 6px;margin:0 0 6px;width:260px}
`;

/** The page's script: renders the SSE snapshots (tables, timeline, hottest keys, histogram). */
const SCRIPT = `
(function () {
  var base = location.pathname.replace(/\\/$/, '');
  var meta = document.querySelector('meta[name="live-view-ticket"]');
  var q = new URLSearchParams(location.search);
  if (meta) q.set('ticket', meta.getAttribute('content'));
  var last = null, skew = 0, MAX_ROWS = 200;
  var filter = document.getElementById('filter');
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; }); }
  function rows(id, items, cols, cells, more) {
    var body = document.querySelector('#' + id + ' tbody');
    var shown = items.slice(0, MAX_ROWS);
    var html = shown.map(function (it) { return '<tr>' + cells(it).map(function (c) { return '<td>' + c + '</td>'; }).join('') + '</tr>'; }).join('');
    if (items.length > shown.length) html += '<tr><td class="empty" colspan="' + cols + '">+' + (items.length - shown.length) + ' more (filter to narrow)</td></tr>';
    body.innerHTML = items.length ? html : '<tr><td class="empty" colspan="' + cols + '">' + (more || 'none') + '</td></tr>';
  }
  function details(e) {
    var skip = { type: 1, at: 1, key: 1, backend: 1, keyTemplate: 1 };
    return Object.keys(e).filter(function (k) { return !skip[k] && e[k] !== undefined; }).map(function (k) { return k + '=' + esc(e[k]); }).join(' ');
  }
  function ms(v) { return v >= 1000 ? (v / 1000).toFixed(1) + ' s' : Math.round(v) + ' ms'; }
  function timeline(h, now) {
    var first = now;
    h.timeline.forEach(function (k) { k.bars.forEach(function (b) { first = Math.min(first, b.from); }); k.marks.forEach(function (m) { first = Math.min(first, m.at); }); });
    var W = 1000, L = 190, row = 18, n = h.timeline.length, span = Math.min(h.windowMs, Math.max(10000, (now - first) * 1.1)), x0 = now - span;
    var x = function (t) { return L + Math.max(0, (t - x0) / span) * (W - L - 8); };
    var out = ['<svg id="timeline-svg" viewBox="0 0 ' + W + ' ' + (n * row + 22) + '" width="100%">'];
    for (var m = 0; m <= 5; m++) { var tx = L + m / 5 * (W - L - 8); out.push('<line x1="' + tx + '" x2="' + tx + '" y1="0" y2="' + n * row + '" stroke="#e4e7eb"/><text class="axis" x="' + (tx - 14) + '" y="' + (n * row + 14) + '">' + (m === 5 ? 'now' : '-' + ms((5 - m) / 5 * span)) + '</text>'); }
    h.timeline.forEach(function (k, i) {
      var y = i * row;
      out.push('<text x="0" y="' + (y + 13) + '">' + esc(k.key.length > 26 ? k.key.slice(0, 25) + '\\u2026' : k.key) + '<title>' + esc(k.key) + ' (' + esc(k.backend) + ')</title></text>');
      k.bars.forEach(function (b) {
        var a = x(b.from), z = x(b.to === undefined ? now : b.to);
        var fill = b.end === 'lost' ? '#d92d20' : b.to === undefined ? '#1a7f37' : b.mode === 'shared' ? '#6aa3e6' : '#2e90fa';
        out.push('<rect class="hold" x="' + a + '" y="' + (y + 3) + '" width="' + Math.max(2, z - a) + '" height="12" rx="2" fill="' + fill + '"><title>token ' + esc(b.token) + ' · ' + esc(b.mode) + ' · ' + ms((b.to === undefined ? now : b.to) - b.from) + (b.end ? ' · ' + b.end : ' · held') + '</title></rect>');
      });
      k.marks.forEach(function (mk) {
        var c = mk.kind === 'lost' || mk.kind === 'failed' ? '#b42318' : mk.kind === 'busy' ? '#dc6803' : '#7a5af8';
        out.push('<circle class="mark-' + mk.kind + '" cx="' + x(mk.at) + '" cy="' + (y + 9) + '" r="3.5" fill="' + c + '"><title>' + mk.kind + (mk.ms !== undefined ? ' ' + ms(mk.ms) : '') + '</title></circle>');
      });
    });
    out.push('</svg>');
    document.getElementById('timeline').innerHTML = n ? out.join('') : '<span class="status">no lock activity in the last 5 minutes</span>';
  }
  function histogram(h) {
    var max = Math.max.apply(null, h.histogram.map(function (b) { return b.count; }).concat([1]));
    var bw = 44, H = 90, out = ['<svg viewBox="0 0 ' + (h.histogram.length * bw) + ' ' + (H + 30) + '" width="100%">'];
    h.histogram.forEach(function (b, i) {
      var bh = Math.round(b.count / max * H);
      out.push('<rect x="' + (i * bw + 4) + '" y="' + (H - bh) + '" width="' + (bw - 8) + '" height="' + bh + '" fill="#7a5af8"><title>' + b.count + ' wait(s)</title></rect>');
      out.push('<text x="' + (i * bw + 6) + '" y="' + (H + 12) + '">' + (b.le === null ? '>5s' : b.le >= 1000 ? '\\u2264' + b.le / 1000 + 's' : '\\u2264' + b.le) + '</text><text x="' + (i * bw + 6) + '" y="' + (H + 25) + '">' + b.count + '</text>');
    });
    document.getElementById('histogram').innerHTML = out.join('') + '</svg>';
  }
  function render() {
    if (!last) return;
    var now = Date.now() - skew, f = filter.value;
    var held = last.held.filter(function (l) { return !f || l.key.indexOf(f) >= 0; });
    document.getElementById('held-count').textContent = '(' + last.held.length + ')';
    rows('held', held, 6, function (l) { return ['<code>' + esc(l.key) + '</code>', esc(l.backend), esc(l.mode), esc(l.fencingToken), Math.max(0, Math.round((now - l.since) / 1000)) + ' s', esc(l.holds)]; });
    rows('backends', last.backends || [], 2, function (b) { return [esc(b.backend), b.note ? '<span class="status">' + esc(b.note) + '</span>' : (b.keys.length ? b.keys.map(function (k) { return '<code>' + esc(k) + '</code>'; }).join(' ') + (b.more ? ' ...' : '') : '<span class="status">none</span>')]; });
    rows('waiting', last.waiting, 3, function (w) { return ['<code>' + esc(w.key) + '</code>', esc(w.backend), esc(w.waiters)]; });
    rows('hot', last.history.hot, 3, function (k) { return ['<code>' + esc(k.key) + '</code>', ms(k.waitMs), esc(k.waits)]; }, 'no waits in the last 5 minutes');
    rows('events', last.recent.slice(0, 20), 4, function (e) { return [new Date(e.at).toLocaleTimeString(), '<span class="t-' + esc(e.type) + '">' + esc(e.type) + '</span>', '<code>' + esc(e.key || e.backend) + '</code>', details(e)]; });
    timeline(last.history, now);
    histogram(last.history);
  }
  var status = document.getElementById('status');
  var source = new EventSource(base + '/events?' + q.toString());
  source.onopen = function () { status.innerHTML = '<span class="ok">live</span> (updates over server-sent events)'; };
  source.onerror = function () {
    status.innerHTML = '<span class="bad">disconnected</span>, retrying...';
    var t = meta && Number(meta.getAttribute('content').split('.')[0]);
    if (t && Date.now() - skew > t) location.reload();
  };
  source.onmessage = function (m) { last = JSON.parse(m.data); skew = Date.now() - last.now; render(); document.body.setAttribute('data-updates', String(Number(document.body.getAttribute('data-updates') || 0) + 1)); };
  filter.addEventListener('input', render);
  setInterval(render, 1000);
})();
`;

/**
 * The Content-Security-Policy of the page: only its own script and style, streams to itself, no
 * framing.
 */
export const LIVE_VIEW_CSP = [
  "default-src 'none'",
  `script-src ${cspHash(SCRIPT)}`,
  `style-src ${cspHash(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The live view's page: static HTML (tables, an SVG timeline and histogram), its stream ticket in a
 * meta tag.
 */
export function liveViewPage(ticket: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Distributed locks: live view</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="live-view-ticket" content="${ticket.replace(/[^\w.-]/g, '')}">
<style>${STYLE}</style></head><body>
<h1>Distributed locks</h1>
<div class="status" id="status">connecting...</div>
<h2>Timeline (up to 5 minutes; bars are holds, hover for the fencing token; dots are waits, busy answers and losses)</h2>
<div class="card" id="timeline"></div>
<div class="grid"><div><h2>Hottest keys by wait time</h2>
<table id="hot"><thead><tr><th>Key</th><th>Waited (total)</th><th>Waits</th></tr></thead><tbody></tbody></table></div>
<div><h2>Wait times (ms)</h2><div class="card" id="histogram"></div></div></div>
<h2>Held by this process <span id="held-count"></span></h2>
<input id="filter" placeholder="filter keys" aria-label="filter keys">
<table id="held"><thead><tr><th>Key</th><th>Backend</th><th>Mode</th><th>Fencing token</th><th>Held for</th><th>Holds</th></tr></thead><tbody></tbody></table>
<h2>Held on the backends (all processes)</h2>
<table id="backends"><thead><tr><th>Backend</th><th>Held keys</th></tr></thead><tbody></tbody></table>
<h2>Waiting</h2>
<table id="waiting"><thead><tr><th>Key</th><th>Backend</th><th>Waiters</th></tr></thead><tbody></tbody></table>
<h2>Recent events</h2>
<table id="events"><thead><tr><th>Time</th><th>Event</th><th>Key</th><th>Details</th></tr></thead><tbody></tbody></table>
<script>${SCRIPT}</script></body></html>`;
}
