/**
 * Traces etcd handoffs (issue 19): N in-process contenders (each its own client and session) loop
 * on one key (hold 1 ms, pause 2 ms) against a private etcd. Every client is wrapped so each txn,
 * range and watch event is timestamped; a handoff is split into: release() called -> delete
 * answered -> the waiter's watch event -> its re-read sent -> answered -> granted (or, for a
 * waiter on the turn watch, watch event -> granted with no read). Also counts
 * watches created with a start revision already in the past (etcd's unsynced group).
 * Usage: npx ts-node --transpile-only test/etcd/handoff-trace.ts [contenders=3] [ms=3000]
 */
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import { EtcdCluster } from '../support/etcd-server';

const N = Number(process.argv[2] ?? 3);
const MS = Number(process.argv[3] ?? 3000);
const now = () => performance.now();
type Ev = { t: number; who: number; what: string; extra?: string };
const log: Ev[] = [];
function wrap(client: any, who: number) {
  const kv = client.kv;
  for (const m of ['txn', 'range', 'deleteRange']) {
    const orig = kv[m].bind(kv);
    kv[m] = async (req: any, o: any) => {
      const t0 = now();
      const isDelete =
        m === 'deleteRange' || (req.success ?? []).some((op: any) => op.request_delete_range);
      const isCreate = (req.success ?? []).some((op: any) => op.request_put);
      const kind = isDelete ? 'delete' : isCreate ? 'create' : 'read';
      log.push({ t: t0, who, what: `${kind}-sent` });
      const res = await orig(req, o);
      log.push({ t: now(), who, what: `${kind}-answered`, extra: res.header?.revision });
      return res;
    };
  }
  const watch = client.watch.bind(client);
  client.watch = () => {
    const b = watch();
    const w = b.watcher.bind(b);
    let start: string | undefined;
    const sr = b.startRevision.bind(b);
    b.startRevision = (r: string) => ((start = r), sr(r));
    b.watcher = () => {
      const t0 = now();
      log.push({ t: t0, who, what: 'watch-create', extra: start });
      const watcher = w();
      watcher.on('connected', (res: any) =>
        log.push({
          t: now(),
          who,
          what: 'watch-connected',
          extra: `${res.header.revision} start ${start}`,
        }),
      );
      watcher.on('delete', () => log.push({ t: now(), who, what: 'watch-delete' }));
      return watcher;
    };
    return b;
  };
  return client;
}
async function main() {
  const cluster = await EtcdCluster.start(1);
  const clients: any[] = [];
  const engines: any[] = [];
  for (let i = 0; i < N; i++) {
    const client = wrap(new Etcd3({ hosts: cluster.hosts() }), i);
    clients.push(client);
    engines.push(
      new LockEngine({
        backend: new EtcdLockBackend({ client, sessionTtl: 10_000 }),
        keyPrefix: '',
        defaults: { ttl: 10_000, wait: 10_000 },
      }),
    );
  }
  // warm up
  for (const e of engines) await (await e.acquire('warm')).release();
  log.length = 0;
  const handoffs: { released: number; by: number; granted?: number; to?: number }[] = [];
  const end = now() + MS;
  await Promise.all(
    engines.map(async (e, who) => {
      while (now() < end) {
        const h = await e.acquire('trace-key');
        const g = now();
        log.push({ t: g, who, what: 'granted' });
        const last = handoffs[handoffs.length - 1];
        if (last && last.granted === undefined) Object.assign(last, { granted: g, to: who });
        await new Promise((r) => setTimeout(r, 1));
        const r = now();
        log.push({ t: r, who, what: 'release-called' });
        handoffs.push({ released: r, by: who });
        await h.release();
        log.push({ t: now(), who, what: 'release-done' });
        await new Promise((r) => setTimeout(r, 2));
      }
    }),
  );
  // per handoff phases
  const phases: Record<string, number[]> = {};
  const add = (k: string, v: number) => (phases[k] ??= []).push(v);
  const done = handoffs.filter((h) => h.granted !== undefined && h.to !== h.by);
  for (const h of done) {
    const between = log.filter((e) => e.t >= h.released && e.t <= (h.granted as number));
    const delAns = between.find((e) => e.who === h.by && e.what === 'delete-answered');
    const wev = between.find((e) => e.who === h.to && e.what === 'watch-delete');
    const readAns = [...between]
      .reverse()
      .find((e) => e.who === h.to && e.what === 'read-answered');
    const readSent = [...between].reverse().find((e) => e.who === h.to && e.what === 'read-sent');
    if (wev && readSent && readSent.t > wev.t) add('watch event->re-read sent', readSent.t - wev.t);
    if (readSent && readAns && readAns.t > readSent.t)
      add('re-read sent->answered', readAns.t - readSent.t);
    const createAns = [...between]
      .reverse()
      .find((e) => e.who === h.to && e.what === 'create-answered');
    add('total release->granted', (h.granted as number) - h.released);
    if (delAns) add('release->delete answered', delAns.t - h.released);
    if (delAns && wev) add('delete answered->watch event', wev.t - delAns.t);
    if (wev && readAns && readAns.t > wev.t)
      add('watch event->re-read answered', readAns.t - wev.t);
    if (readAns) add('re-read answered->granted', (h.granted as number) - readAns.t);
    // The turn watch (etcd.turn.ts): granted from the event itself, no read after it.
    if (wev && !(readSent && readSent.t > wev.t))
      add('watch event->granted (no re-read)', (h.granted as number) - wev.t);
    if (!wev && createAns) add('(granted by its create txn, no wait)', 1);
  }
  const q = (a: number[], p: number) => {
    const s = [...a].sort((x, y) => x - y);
    return s[Math.min(s.length - 1, Math.floor(p * s.length))];
  };
  console.log(
    `${done.length} handoffs between ${N} contenders in ${MS} ms (${(done.length / (MS / 1000)).toFixed(0)}/s)`,
  );
  for (const [k, v] of Object.entries(phases))
    console.log(
      `${k.padEnd(40)} n=${String(v.length).padStart(4)} p50 ${q(v, 0.5).toFixed(2)} p90 ${q(v, 0.9).toFixed(2)} max ${Math.max(...v).toFixed(2)} ms`,
    );
  const conn = log.filter((e) => e.what === 'watch-connected');
  const creates = log.filter((e) => e.what === 'watch-create');
  const unsynced = conn.filter((e) => {
    const [rev, , start] = (e.extra as string).split(' ');
    return start !== undefined && start !== 'undefined' && BigInt(start) <= BigInt(rev);
  });
  console.log(
    `watches: ${creates.length} created, ${conn.length} connected; started in the past (server puts them in the unsynced group, synced every 100 ms): ${unsynced.length}`,
  );
  for (const e of engines) await e.close();
  for (const c of clients) c.close();
  await cluster.destroy();
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
