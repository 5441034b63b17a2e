import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { newZkClient, ZooKeeperServer } from '../support/zookeeper-server';

async function main() {
  const server = await ZooKeeperServer.start();
  const backend = new ZooKeeperLockBackend({ clientFactory: () => newZkClient(server.connectionString, 5_000) });
  const e = new LockEngine({ backend, defaults: { ttl: 5_000, wait: 10_000 } });
  const pct = (a: number[], p: number) => [...a].sort((x, y) => x - y)[Math.floor(a.length * p)];
  const res: Record<string, { acq: number[]; rel: number[] }> = { lock: { acq: [], rel: [] }, sem3: { acq: [], rel: [] } };
  for (let w = 0; w < 30; w++) { const h = await e.acquire('warm', { permits: 3 }); await h.release(); const g = await e.acquire('warm2'); await g.release(); }
  for (let rep = 0; rep < 5; rep++) {
    for (let i = 0; i < 60; i++) {
      for (const kind of (i % 2 ? ['lock', 'sem3'] : ['sem3', 'lock'])) {
        const t0 = performance.now();
        const h = await e.acquire(`b-${kind}`, kind === 'sem3' ? { permits: 3 } : {});
        const t1 = performance.now();
        await h.release();
        const t2 = performance.now();
        res[kind].acq.push(t1 - t0); res[kind].rel.push(t2 - t1);
      }
    }
  }
  for (const [k, v] of Object.entries(res))
    console.log(k, 'n', v.acq.length, 'acquire p50', pct(v.acq, 0.5).toFixed(2), 'p90', pct(v.acq, 0.9).toFixed(2), 'release p50', pct(v.rel, 0.5).toFixed(2), 'p90', pct(v.rel, 0.9).toFixed(2));
  // tryAcquire on a full semaphore (the read-only fast path) vs a busy lock
  const full = [await e.acquire('full', { permits: 1 + 1 })];
  const other = new LockEngine({ backend: new ZooKeeperLockBackend({ clientFactory: () => newZkClient(server.connectionString, 5_000) }), defaults: { ttl: 5_000 } });
  full.push(await other.acquire('full', { permits: 2 }));
  const held = await e.acquire('busy');
  const busy: Record<string, number[]> = { semFull: [], lockBusy: [] };
  for (let i = 0; i < 200; i++) {
    for (const kind of (i % 2 ? ['semFull', 'lockBusy'] : ['lockBusy', 'semFull'])) {
      const t0 = performance.now();
      const r = kind === 'semFull' ? await other.tryAcquire('full', { permits: 2 }) : await other.tryAcquire('busy');
      if (r) throw new Error('granted?');
      busy[kind].push(performance.now() - t0);
    }
  }
  for (const [k, v] of Object.entries(busy)) console.log(k, 'tryAcquire busy p50', pct(v, 0.5).toFixed(2), 'p90', pct(v, 0.9).toFixed(2));
  await held.release(); for (const h of full) await h.release();
  await e.close(); await other.close(); await server.destroy();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
