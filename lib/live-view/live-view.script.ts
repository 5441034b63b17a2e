/**
 * The live view page's script (inline, allowed by its hash in the CSP; no external asset): it
 * renders each pushed snapshot. One time window for every timeline row (the server's, rounded to
 * 10 s, 30 s, 1, 2 or 5 minutes) with round ticks and a legend; keys decoded as the app wrote them
 * (escaped); human units; lost locks in red with a counter; a click on a key filters every panel
 * (the filter travels to the server, so any key can be reached, not only the first 200 rows).
 */
export const LIVE_VIEW_SCRIPT = `
(function () {
  var base = location.pathname.replace(/\\/$/, '');
  var meta = document.querySelector('meta[name="live-view-ticket"]');
  var q = new URLSearchParams(location.search);
  if (meta) q.set('ticket', meta.getAttribute('content'));
  var last = null, skew = 0, MAX_ROWS = 200, source = null, timer = null;
  var filter = document.getElementById('filter');
  var status = document.getElementById('status');
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; }); }
  function dk(k) { try { return decodeURIComponent(String(k)); } catch (e) { return String(k); } }
  function key(k, max) { var d = dk(k), s = max && d.length > max ? d.slice(0, max - 1) + '\\u2026' : d; return '<a href="#" class="key" data-key="' + esc(k) + '" title="' + esc(d) + ' (click to filter)">' + esc(s) + '</a>'; }
  function ms(v) { v = Number(v); if (!isFinite(v)) return ''; if (v < 1000) return Math.round(v) + ' ms'; if (v < 60000) return (v / 1000).toFixed(v < 10000 ? 1 : 0) + ' s'; var m = Math.floor(v / 60000), s = Math.round((v % 60000) / 1000); return m + ' min' + (s ? ' ' + s + ' s' : ''); }
  function token(t) { t = String(t); return t.length > 8 ? '<span title="' + esc(t) + '">\\u2026' + esc(t.slice(-6)) + '</span>' : esc(t); }
  function rows(id, items, total, cols, cells, none) {
    var body = document.querySelector('#' + id + ' tbody');
    var shown = items.slice(0, MAX_ROWS);
    var html = shown.map(function (it) { return '<tr' + (it.type === 'lost' ? ' class="lost"' : '') + '>' + cells(it).map(function (c) { return '<td>' + c + '</td>'; }).join('') + '</tr>'; }).join('');
    if (total > shown.length) html += '<tr><td class="empty" colspan="' + cols + '">+' + (total - shown.length) + ' more (filter to narrow)</td></tr>';
    body.innerHTML = shown.length ? html : '<tr><td class="empty" colspan="' + cols + '">' + (none || 'none') + '</td></tr>';
  }
  var UNITS = { waitMs: 1, heldMs: 1, retryAfter: 1, ttl: 1, wait: 1 };
  function details(e) {
    var skip = { type: 1, at: 1, key: 1, backend: 1, keyTemplate: 1 };
    return Object.keys(e).filter(function (k) { return !skip[k] && e[k] !== undefined && e[k] !== false; }).map(function (k) {
      var v = e[k];
      if (UNITS[k]) return k.replace(/Ms$/, '') + ' ' + ms(v);
      if (k === 'fencingToken' || k === 'token' || k === 'highest') return k + ' ' + token(v);
      if (v === true) return esc(k);
      return esc(k) + ' ' + esc(k === 'resource' ? dk(v) : v);
    }).join(' \\u00b7 ');
  }
  var SPANS = [10000, 30000, 60000, 120000, 300000], STEPS = [2000, 5000, 10000, 30000, 60000];
  function timeline(h, now) {
    var first = now;
    h.timeline.forEach(function (k) { k.bars.forEach(function (b) { first = Math.min(first, b.from); }); k.marks.forEach(function (m) { first = Math.min(first, m.at); }); });
    var i = 0; while (i < SPANS.length - 1 && (SPANS[i] < now - first || SPANS[i] < 10000) && SPANS[i] < h.windowMs) i++;
    var span = Math.min(SPANS[i], Math.max(h.windowMs, SPANS[0])), step = STEPS[i], x0 = now - span;
    var W = 1000, L = 200, row = 18, n = h.timeline.length;
    var x = function (t) { return L + Math.max(0, (t - x0) / span) * (W - L - 8); };
    var out = ['<svg id="timeline-svg" viewBox="0 0 ' + W + ' ' + (n * row + 22) + '" width="100%">'];
    for (var t = 0; t <= span; t += step) { var tx = x(now - t); out.push('<line x1="' + tx + '" x2="' + tx + '" y1="0" y2="' + n * row + '" stroke="#e4e7eb"/><text class="axis" x="' + (tx - 12) + '" y="' + (n * row + 14) + '">' + (t === 0 ? 'now' : '\\u2212' + (t < 60000 ? t / 1000 + ' s' : t / 60000 + ' min')) + '</text>'); }
    h.timeline.forEach(function (k, r) {
      var y = r * row, d = dk(k.key);
      out.push('<text class="key" data-key="' + esc(k.key) + '" x="0" y="' + (y + 13) + '">' + esc(d.length > 28 ? d.slice(0, 27) + '\\u2026' : d) + '<title>' + esc(d) + ' (' + esc(k.backend) + '): click to filter</title></text>');
      k.bars.forEach(function (b) {
        var end = b.to === undefined ? now : b.to, a = x(b.from), z = x(end);
        var fill = b.end === 'lost' ? '#d92d20' : b.to === undefined ? '#1a7f37' : b.mode === 'shared' ? '#84b8f0' : '#2e90fa';
        out.push('<rect class="hold' + (b.end === 'lost' ? ' lost' : '') + '" x="' + a + '" y="' + (y + 3) + '" width="' + Math.max(2, z - a) + '" height="12" rx="2" fill="' + fill + '"><title>token ' + esc(b.token) + ' \\u00b7 ' + esc(b.mode) + ' \\u00b7 ' + ms(end - b.from) + (b.end ? ' \\u00b7 ' + b.end : ' \\u00b7 held') + '</title></rect>');
      });
      k.marks.forEach(function (mk) {
        var c = mk.kind === 'lost' || mk.kind === 'failed' ? '#b42318' : mk.kind === 'busy' ? '#dc6803' : '#7a5af8';
        out.push('<circle class="mark-' + mk.kind + '" cx="' + x(mk.at) + '" cy="' + (y + 9) + '" r="3.5" fill="' + c + '"><title>' + mk.kind + (mk.ms !== undefined ? ' after ' + ms(mk.ms) : '') + '</title></circle>');
      });
    });
    out.push('</svg>');
    document.getElementById('timeline').innerHTML = n ? out.join('') : '<span class="status">no lock activity in the last ' + ms(h.windowMs) + '</span>';
    document.getElementById('window').textContent = 'last ' + ms(span);
  }
  function histogram(h) {
    var max = Math.max.apply(null, h.histogram.map(function (b) { return b.count; }).concat([1]));
    var bw = 44, H = 90, out = ['<svg viewBox="0 0 ' + (h.histogram.length * bw) + ' ' + (H + 30) + '" width="100%">'];
    h.histogram.forEach(function (b, i) {
      var bh = Math.round(b.count / max * H);
      out.push('<rect x="' + (i * bw + 4) + '" y="' + (H - bh) + '" width="' + (bw - 8) + '" height="' + bh + '" fill="#7a5af8"><title>' + b.count + ' wait(s)</title></rect>');
      out.push('<text x="' + (i * bw + 6) + '" y="' + (H + 12) + '">' + (b.le === null ? '>5s' : '\\u2264' + (b.le < 1000 ? b.le + 'ms' : b.le / 1000 + 's')) + '</text><text x="' + (i * bw + 6) + '" y="' + (H + 25) + '">' + b.count + '</text>');
    });
    document.getElementById('histogram').innerHTML = out.join('') + '</svg>';
  }
  function who(h) {
    if (h.host !== undefined) { var at = h.host + ':' + h.pid; return esc(at) + (h.instance && h.instance !== at ? ' <b>' + esc(h.instance) + '</b>' : ''); }
    if (h.data !== undefined) return '<span class="status">data</span> ' + esc(h.data);
    return '<span class="status">' + (h.owner ? 'owner ' + esc(h.owner) + '\\u2026' : 'not stored') + '</span>';
  }
  function listing(backends, match, now) {
    var out = [];
    backends.forEach(function (b) {
      if (b.note) { out.push([esc(b.backend), '<span class="status">' + esc(b.note) + '</span>', '', '']); return; }
      var shown = {};
      (b.locks || []).filter(function (l) { return match(l.key); }).forEach(function (l) {
        shown[l.key] = 1;
        var age = now - (b.at || now), me = last.self;
        var hs = l.holders.map(function (h) {
          var tip = (h.ttlMs !== undefined ? 'ttl ' + ms(Math.max(0, h.ttlMs - age)) + ' left' : 'no ttl (session)') + ' \\u00b7 token ' + (l.fencingToken || '?') + (h.owner ? ' \\u00b7 owner ' + h.owner + '\\u2026' : '');
          var mine = me && h.host === me.host && h.pid === me.pid;
          return '<span class="holder' + (mine ? ' mine' : '') + '" title="' + esc(tip) + '">' + who(h) + (mine ? ' <i>(this process)</i>' : '') + '</span>';
        });
        out.push([esc(b.backend), key(l.key, 40), hs.join('<br>'), esc(l.mode || '')]);
      });
      var rest = b.keys.filter(function (k) { return match(k) && !shown[k]; });
      if (rest.length) out.push([esc(b.backend), rest.slice(0, 20).map(function (k) { return key(k, 40); }).join(' ') + (rest.length > 20 || b.more ? ' \\u2026' : ''), '<span class="status">' + (b.locks ? 'holders read for the first keys only' : 'this backend cannot inspect') + '</span>', '']);
    });
    return out;
  }
  function hot(h) {
    var total = h.hot.reduce(function (n, k) { return n + k.waitMs; }, 0);
    rows('hot', h.hot, h.hot.length, 6, function (k) {
      var w = Math.round(60 * k.waitMs / Math.max(1, total));
      return [key(k.key, 32), '<svg class="share" width="60" height="10"><rect width="60" height="10" fill="#eef1f5"/><rect width="' + Math.max(1, w) + '" height="10" fill="#7a5af8"><title>' + Math.round(100 * k.waitMs / Math.max(1, total)) + '% of the waiting on these keys</title></rect></svg>', ms(k.waitMs), esc(k.waits), ms(k.waitMs / Math.max(1, k.waits)), ms(k.maxMs)];
    }, 'no waits in the last ' + ms(h.windowMs));
    var waits = h.histogram.reduce(function (n, b) { return n + b.count; }, 0), slow = 0;
    h.histogram.forEach(function (b) { if (b.le === null || b.le > 100) slow += b.count; });
    var longest = h.hot.reduce(function (m, k) { return Math.max(m, k.maxMs); }, 0);
    document.getElementById('hot-summary').textContent = waits + ' wait' + (waits === 1 ? '' : 's') + ' in the last ' + ms(h.windowMs) + ' \\u00b7 ' + slow + ' over 100 ms' + (h.hot.length ? ' \\u00b7 ' + h.hot.length + ' contended key' + (h.hot.length > 1 ? 's' : '') + ', longest wait ' + ms(longest) : ' \\u00b7 no contended key');
  }
  function lostCount(h) {
    var n = 0; h.timeline.forEach(function (k) { k.marks.forEach(function (m) { if (m.kind === 'lost') n++; }); }); return n;
  }
  function render() {
    if (!last) return;
    var now = Date.now() - skew, f = filter.value, me = last.self ? last.self.host + ':' + last.self.pid + (last.self.instance && last.self.instance !== last.self.host + ':' + last.self.pid ? ' (' + last.self.instance + ')' : '') : '';
    var match = function (k) { return !f || dk(k).indexOf(f) >= 0 || String(k).indexOf(f) >= 0; };
    var held = last.held.filter(function (l) { return match(l.key); });
    document.getElementById('held-count').textContent = '(' + (f ? held.length : last.heldTotal) + ')';
    rows('held', held, f ? held.length : last.heldTotal, 7, function (l) { return [key(l.key), esc(l.backend), '<span title="this process; token ' + esc(l.fencingToken) + ', held since ' + esc(new Date(l.since).toLocaleTimeString()) + '">' + esc(me) + '</span>', esc(l.mode), token(l.fencingToken), ms(now - l.since), esc(l.holds)]; });
    var listed = listing(last.backends || [], match, now);
    rows('backends', listed, listed.length, 4, function (r) { return r; }, 'nothing held');
    rows('waiting', last.waiting, last.waitingTotal, 4, function (w) { return [key(w.key), esc(w.backend), esc(w.waiters), w.oldestMs === undefined ? '' : ms(w.oldestMs + (Date.now() - skew - last.now))]; });
    hot(last.history);
    rows('events', last.recent.slice(0, 20), Math.min(20, last.recent.length), 4, function (e) { return [new Date(e.at).toLocaleTimeString(), '<span class="t-' + esc(e.type) + '">' + esc(e.type) + '</span>', e.key ? key(e.key, 40) : '<code>' + esc(e.backend || '') + '</code>', details(e)]; });
    var lost = lostCount(last.history), badge = document.getElementById('lost');
    badge.textContent = lost ? lost + ' lost lock' + (lost > 1 ? 's' : '') + ' in the window' : 'no lost locks';
    badge.className = lost ? 'badge bad' : 'badge';
    timeline(last.history, now);
    histogram(last.history);
  }
  function connect() {
    if (source) source.close();
    var p = new URLSearchParams(q);
    if (filter.value) p.set('filter', filter.value); else p.delete('filter');
    source = new EventSource(base + '/events?' + p.toString());
    source.onopen = function () { status.innerHTML = '<span class="ok">live</span> (updates over server-sent events)'; };
    source.onerror = function () {
      status.innerHTML = '<span class="bad">disconnected</span>, retrying...';
      var t = meta && Number(meta.getAttribute('content').split('.')[0]);
      if (t && Date.now() - skew > t) location.reload();
    };
    source.onmessage = function (m) { last = JSON.parse(m.data); skew = Date.now() - last.now; render(); document.body.setAttribute('data-updates', String(Number(document.body.getAttribute('data-updates') || 0) + 1)); };
  }
  function refilter() { render(); clearTimeout(timer); timer = setTimeout(connect, 250); }
  filter.addEventListener('input', refilter);
  document.addEventListener('click', function (e) {
    var el = e.target && e.target.closest ? e.target.closest('[data-key]') : null;
    if (!el) return;
    e.preventDefault();
    filter.value = dk(el.getAttribute('data-key'));
    refilter();
  });
  connect();
  setInterval(render, 1000);
})();
`;
