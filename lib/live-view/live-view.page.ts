import { cspHash } from './live-view.access';
import { LIVE_VIEW_SCRIPT as SCRIPT } from './live-view.script';

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
code,a.key{font:12px ui-monospace,monospace}input{font:13px system-ui;padding:3px 6px;margin:0 0 6px;width:260px}
a.key{color:#1d232a;text-decoration:none;border-bottom:1px dotted #8a94a0}a.key:hover{color:#175cd3}svg text.key{cursor:pointer}
tr.lost td{background:#fef3f2}.badge{display:inline-block;margin-left:10px;padding:1px 8px;border-radius:10px;background:#eef1f5;color:#4a5561;font-size:12px}.badge.bad{background:#d92d20;color:#fff}
.col{display:flex;flex-direction:column}.fill{flex:1}#hot-card table{box-shadow:none}#hot-summary{margin:8px 10px 2px;font-size:12px}svg.share{vertical-align:middle}#histogram svg{max-height:150px}
.holder{border-bottom:1px dotted #8a94a0;cursor:help}.holder.mine i{color:#5b6670}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:6px 2px 0;font-size:12px;color:#4a5561}.legend i{display:inline-block;width:14px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}.legend i.dot{width:8px;height:8px;border-radius:50%}
.c-held{background:#1a7f37}.c-ex{background:#2e90fa}.c-sh{background:#84b8f0}.c-lost{background:#d92d20}.c-waited{background:#7a5af8}.c-busy{background:#dc6803}.c-failed{background:#b42318}
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
<div class="status"><span id="status">connecting...</span><span class="badge" id="lost">no lost locks</span></div>
<h2>Timeline, <span id="window">last 5 min</span> (hover for tokens and times; click a key to filter)</h2>
<div class="card"><div id="timeline"></div>
<div class="legend"><span><i class="c-held"></i>held now</span><span><i class="c-ex"></i>exclusive hold, released</span><span><i class="c-sh"></i>shared hold</span><span><i class="c-lost"></i>lost</span><span><i class="dot c-waited"></i>granted after waiting</span><span><i class="dot c-busy"></i>busy (gave up)</span><span><i class="dot c-failed"></i>lost or failed</span></div></div>
<div class="grid"><div class="col"><h2>Hottest keys by wait time</h2>
<div class="card fill" id="hot-card"><table id="hot"><thead><tr><th>Key</th><th>Share</th><th>Waited</th><th>Waits</th><th>Average</th><th>Longest</th></tr></thead><tbody></tbody></table>
<div class="status" id="hot-summary"></div></div></div>
<div class="col"><h2>Wait times</h2><div class="card fill" id="histogram"></div></div></div>
<h2>Held by this process <span id="held-count"></span></h2>
<input id="filter" placeholder="filter keys" aria-label="filter keys">
<table id="held"><thead><tr><th>Key</th><th>Backend</th><th>Holder (host:pid instance)</th><th>Mode</th><th>Fencing token</th><th>Held for</th><th>Holds</th></tr></thead><tbody></tbody></table>
<h2>Held on the backends (all processes)</h2>
<table id="backends"><thead><tr><th>Backend</th><th>Key</th><th>Holder: host:pid instance (hover: ttl left, token)</th><th>Mode</th></tr></thead><tbody></tbody></table>
<h2>Waiting</h2>
<table id="waiting"><thead><tr><th>Key</th><th>Backend</th><th>Waiters</th><th>Longest wait</th></tr></thead><tbody></tbody></table>
<h2>Recent events</h2>
<table id="events"><thead><tr><th>Time</th><th>Event</th><th>Key</th><th>Details</th></tr></thead><tbody></tbody></table>
<script>${SCRIPT}</script></body></html>`;
}
