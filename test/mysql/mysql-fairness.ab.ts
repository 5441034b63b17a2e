/**
 * Issue 19 A/B, interleaved in one process: `npx ts-node --transpile-only
 * test/mysql/mysql-fairness.ab.ts <old lib dir> [rounds=3] [seconds=4]`. Eight engines, each on its
 * own pool (separate sessions and notify locks: to the server, eight processes), run the contended
 * loop of the benchmark (one key, hold 1 ms, pause 2 ms) against one private MariaDB, alternating
 * between the backend of <old lib dir> (e.g. a `git archive` of an older commit's lib/) and this
 * tree's. Prints per window: handoffs/s, p50/p99 wait in ms, p99 wait counted in handoffs to
 * others (load-independent: FIFO bounds it at 7), least-served share, and the backend's statements
 * per handoff. Not a test; a measuring tool.
 */
import { createPool, type Pool } from 'mysql2/promise';
import { MySqlLockBackend as NewBackend } from '../../lib/backends/mysql';
import { LockEngine } from '../../lib/core/lock-engine';
import { MariaDbServer } from '../support/mariadb-server';

type Ctor = typeof NewBackend;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function counted(pool: Pool, count: { n: number }) {
  return {
    pool: pool.pool,
    getConnection: async () => {
      const conn = await pool.getConnection();
      return {
        query: (sql: string, values?: unknown) => (count.n++, conn.query(sql, values as never)),
        execute: (sql: string, values?: unknown) => (count.n++, conn.execute(sql, values as never)),
        release: () => conn.release(),
        destroy: () => conn.destroy(),
      };
    },
  };
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? 0;

async function window(server: MariaDbServer, Backend: Ctor, key: string, seconds: number) {
  const pools = Array.from({ length: 8 }, () =>
    createPool({ ...server.connection, connectionLimit: 4 }),
  );
  const count = { n: 0 };
  const engines = pools.map(
    (p) =>
      new LockEngine({
        backend: new Backend({ client: counted(p, count) as never }),
        keyPrefix: '',
        defaults: { ttl: 10_000, wait: 30_000 },
      }),
  );
  let grants = 0;
  let measuring = false;
  const waits: number[] = [];
  const waitsInHandoffs: number[] = [];
  const perWorker = engines.map(() => 0);
  let stop = false;
  const loops = engines.map(async (e, i) => {
    while (!stop) {
      const start = performance.now();
      const seen = grants;
      const h = await e.acquire(key);
      grants++;
      if (measuring) {
        waits.push(performance.now() - start);
        waitsInHandoffs.push(grants - seen - 1);
        perWorker[i]++;
      }
      await sleep(1);
      await h.release();
      await sleep(2);
    }
  });
  await sleep(1000); // warm-up
  const g0 = grants;
  const c0 = count.n;
  measuring = true;
  const t0 = performance.now();
  await sleep(seconds * 1000);
  measuring = false;
  const secs = (performance.now() - t0) / 1000;
  const handoffs = grants - g0;
  const statements = count.n - c0;
  stop = true;
  await Promise.all(loops);
  await Promise.all(engines.map((e) => e.close()));
  await Promise.all(pools.map((p) => p.end()));
  const mean = perWorker.reduce((a, b) => a + b, 0) / perWorker.length;
  return {
    handoffsPerS: Math.round(handoffs / secs),
    p50ms: Number(pct(waits, 50).toFixed(1)),
    p99ms: Number(pct(waits, 99).toFixed(1)),
    p99handoffs: pct(waitsInHandoffs, 99),
    maxHandoffs: Math.max(...waitsInHandoffs),
    leastServed: Number((Math.min(...perWorker) / mean).toFixed(2)),
    statementsPerHandoff: Number((statements / Math.max(1, handoffs)).toFixed(1)),
  };
}

async function main() {
  const oldDir = process.argv[2];
  const rounds = Number(process.argv[3] ?? 3);
  const seconds = Number(process.argv[4] ?? 4);
  const Old = (require(`${oldDir}/backends/mysql`) as { MySqlLockBackend: Ctor }).MySqlLockBackend;
  const server = await MariaDbServer.start();
  try {
    for (let r = 0; r < rounds; r++) {
      for (const [name, B] of [
        ['old', Old],
        ['new', NewBackend],
      ] as const) {
        const res = await window(server, B, `ab:${name}:${r}`, seconds);
        console.log(JSON.stringify({ round: r, backend: name, ...res }));
      }
    }
  } finally {
    await server.destroy();
  }
}

void main();
