import type { DemoRoute } from './routes';

/** What each route of the demo shows; a route missing here is still listed, without a note. */
const NOTES: Record<string, string> = {
  'GET /': 'this page',
  'POST /orders/:id/pay': '@Locked(order:<id>), waits up to 3 s: ten clicks at once charge once',
  'POST /orders/:id/pay-now':
    "@Locked(order:<id>, onBusy: 'fail'): 409 + Retry-After while the order is locked",
  'GET /orders/:id': "the order's payments, with the fencing token of each",
  'GET /inventory/:sku': "@Locked(inventory:<sku>, mode: 'shared'): reads run together",
  'PUT /inventory/:sku': 'the same key, exclusive: a stock update waits for the readers',
  'POST /jobs/report/:steps':
    "@Locked(job:nightly-report, onBusy: 'skip'): a second trigger is skipped",
  'POST /demo/hold/:id': 'holds order:<id> for ?ms= milliseconds (default 10000), to provoke a 409',
};

const escape = (s: string): string =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

/** The demo's home page: its routes and two commands that show a 409. */
export function homePage(routes: DemoRoute[], baseUrl: string, backend: string): string {
  const rows = routes
    .map((r) => {
      const note = NOTES[`${r.method} ${r.path}`] ?? '';
      return `<tr><td><code>${escape(r.method)}</code></td><td><code>${escape(r.path)}</code></td><td>${escape(note)}</td></tr>`;
    })
    .join('\n');
  const hold = `curl -X POST '${baseUrl}/demo/hold/42?ms=10000' &`;
  const busy = `curl -i -X POST ${baseUrl}/orders/42/pay-now -H 'content-type: application/json' -d '{"amount": 25}'`;
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>nestjs-distributed-lock demo</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}
td,th{padding:.2rem .6rem;text-align:left;vertical-align:top}pre{background:#f4f4f4;padding:.6rem;overflow-x:auto}</style>
</head>
<body>
<h1>nestjs-distributed-lock demo</h1>
<p>A small NestJS app (orders, inventory, a job) using the package on the <strong>${escape(backend)}</strong> backend.</p>
<h2>Routes</h2>
<table>
<tr><th>method</th><th>path</th><th>what it shows</th></tr>
${rows}
</table>
<h2>See a 409</h2>
<p>Hold order 42's lock for 10 seconds, then try to pay it at once:</p>
<pre>${escape(hold)}
${escape(busy)}</pre>
<p>The second command answers <code>409 Conflict</code> with a <code>Retry-After</code> header until the hold ends;
after that it answers <code>201</code>.</p>
</body>
</html>
`;
}
