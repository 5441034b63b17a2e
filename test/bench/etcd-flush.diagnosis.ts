import { loadavg } from 'node:os';
import { BenchServers } from './bench.servers';
import { ours } from './bench.contenders';
import { etcd3Lock } from './bench.competitors';
import { runHandoff, type HandoffRun } from './bench.handoff';
import { WorkerPool } from './bench.workers';
import { fourLetter } from '../support/zookeeper-server';
import { median } from './bench.stats';

/**
 * Diagnosis of the etcd contended gap (issue 19), not a benchmark of record: `node -r
 * ts-node/register/transpile-only test/bench/etcd-flush.diagnosis.ts [rounds] [windowMs]`.
 * Runs the contended handoff (8 worker processes, hold 1 ms, pause 2 ms; and 1 and 2 workers for
 * the scaling step) interleaved over: ours on etcd with its data dir on disk (as the benchmark),
 * the etcd3 package's lock on the same etcd, ours on an etcd whose data dir is on tmpfs
 * (/dev/shm: fdatasync returns at once, which is what `--unsafe-no-fsync` does on etcd >= 3.5;
 * 3.4.23 has no such flag), and ours on ZooKeeper (data dir on disk, forceSync default yes).
 * Around every etcd window it reads etcd's /metrics (WAL fsync and backend commit histograms),
 * around every ZooKeeper window `mntr` (fsync time). Prints one JSON line per window and a summary.
 */
interface Histo {
  sum: number;
  count: number;
  buckets: Map<number, number>;
}

async function metrics(url: string): Promise<Record<string, Histo>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, Histo> = {};
  for (const name of [
    'etcd_disk_wal_fsync_duration_seconds',
    'etcd_disk_backend_commit_duration_seconds',
  ]) {
    const h: Histo = { sum: 0, count: 0, buckets: new Map() };
    for (const line of text.split('\n')) {
      if (line.startsWith(`${name}_sum `)) h.sum = Number(line.split(' ')[1]);
      else if (line.startsWith(`${name}_count `)) h.count = Number(line.split(' ')[1]);
      else if (line.startsWith(`${name}_bucket{le="`)) {
        const le = line.slice(name.length + 12).split('"')[0];
        h.buckets.set(le === '+Inf' ? Infinity : Number(le), Number(line.split(' ')[1]));
      }
    }
    out[name] = h;
  }
  return out;
}

/** Count, mean and the bucket bound holding the median of the delta between two scrapes (ms). */
function delta(a: Histo, b: Histo) {
  const count = b.count - a.count;
  const bounds = [...b.buckets.keys()].sort((x, y) => x - y);
  let p50 = NaN;
  for (const le of bounds) {
    if ((b.buckets.get(le) ?? 0) - (a.buckets.get(le) ?? 0) >= count / 2) {
      p50 = le * 1000;
      break;
    }
  }
  return { count, meanMs: count ? ((b.sum - a.sum) / count) * 1000 : 0, p50BucketMs: p50 };
}

async function zkFsync(port: number) {
  const m = await fourLetter(port, 'mntr');
  const get = (k: string) => Number(m.match(new RegExp(`zk_${k}\\s+(\\S+)`))?.[1]);
  return { avg: get('avg_fsynctime'), cnt: get('cnt_fsynctime'), sum: get('sum_fsynctime') };
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3);
  const windowMs = Number(process.argv[3] ?? 3_000);
  const disk = new BenchServers();
  await disk.need('etcd');
  await disk.need('zookeeper');
  const tmp = process.env.TMPDIR;
  process.env.TMPDIR = '/dev/shm';
  const shm = new BenchServers();
  await shm.need('etcd');
  if (tmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = tmp;
  const pool = await WorkerPool.start(8);
  const variants = [
    { label: 'ours etcd (disk)', c: ours('etcd'), s: disk },
    { label: 'etcd3 lock (disk)', c: etcd3Lock, s: disk },
    { label: 'ours etcd (tmpfs: no flush)', c: ours('etcd'), s: shm },
    { label: 'ours zookeeper (disk, forceSync=yes)', c: ours('zookeeper'), s: disk },
  ];
  const results = new Map<string, { perSec: number[]; p50: number[]; fsync: number[] }>();
  const zkPort = Number(disk.zookeeper?.connectionString.split(':').pop());
  try {
    for (let round = 0; round < rounds; round++) {
      for (const workers of [8, 1, 2]) {
        const order = round % 2 === 0 ? variants : [...variants].reverse();
        for (const v of order) {
          const url = v.s.etcd?.hosts()[0] as string;
          const isZk = v.c.system === 'zookeeper';
          const before = isZk ? await zkFsync(zkPort) : await metrics(url);
          const r: HandoffRun = await runHandoff(
            v.c,
            v.s,
            {
              workers,
              durationMs: windowMs,
              holdMs: 1,
              pauseMs: 2,
              key: `diag${round}:${workers}:${v.label.length}`,
            },
            pool,
          );
          const after = isZk ? await zkFsync(zkPort) : await metrics(url);
          let flush: Record<string, unknown>;
          if (isZk) {
            const b = before as Awaited<ReturnType<typeof zkFsync>>;
            const a = after as Awaited<ReturnType<typeof zkFsync>>;
            flush = {
              zkFsyncCount: a.cnt - b.cnt,
              zkFsyncMeanMs: (a.sum - b.sum) / (a.cnt - b.cnt),
              zkAvgFsyncMs: a.avg,
            };
          } else {
            const b = before as Record<string, Histo>;
            const a = after as Record<string, Histo>;
            flush = {
              walFsync: delta(
                b.etcd_disk_wal_fsync_duration_seconds,
                a.etcd_disk_wal_fsync_duration_seconds,
              ),
              backendCommit: delta(
                b.etcd_disk_backend_commit_duration_seconds,
                a.etcd_disk_backend_commit_duration_seconds,
              ),
            };
          }
          const key = `${v.label} x${workers}`;
          const acc = results.get(key) ?? { perSec: [], p50: [], fsync: [] };
          acc.perSec.push(r.handoffsPerSec);
          acc.p50.push(r.wait.median);
          const f = flush as { walFsync?: { meanMs: number }; zkFsyncMeanMs?: number };
          acc.fsync.push(f.walFsync?.meanMs ?? f.zkFsyncMeanMs ?? NaN);
          results.set(key, acc);
          console.log(
            JSON.stringify({
              round,
              workers,
              variant: v.label,
              handoffsPerSec: Math.round(r.handoffsPerSec),
              p50WaitMs: +r.wait.median.toFixed(2),
              overlaps: r.overlaps,
              load1: +loadavg()[0].toFixed(1),
              ...flush,
            }),
          );
        }
      }
    }
  } finally {
    await pool.stop();
    await Promise.all([disk.destroy(), shm.destroy()]);
  }
  console.log(
    '\nsummary (medians over rounds): variant x workers | handoffs/s | p50 wait ms | mean fsync ms',
  );
  for (const [k, v] of results)
    console.log(
      `${k} | ${median(v.perSec).toFixed(0)} | ${median(v.p50).toFixed(2)} | ${median(v.fsync).toFixed(2)}`,
    );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
