import { Etcd3 } from 'etcd3';
import { fourLetter, connectedZkClient } from '../support/zookeeper-server';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import type { BenchServers } from './bench.servers';

/**
 * What the ceiling scenario reads from the server itself, so a round trip is counted, not guessed.
 * etcd: its /metrics (gRPC requests handled by method, raft proposals committed = durable writes,
 * WAL fsyncs). ZooKeeper: `mntr` (packets received = requests, fsyncs) and `srvr` (the last zxid:
 * its growth within one epoch is the number of transactions logged, failed writes included).
 */
export type Counters = Record<string, number>;

export type CeilingSystem = 'etcd' | 'zookeeper';

export async function readCounters(system: CeilingSystem, s: BenchServers): Promise<Counters> {
  return system === 'etcd' ? etcdCounters(s.etcd!.hosts()[0]) : zkCounters(zkPort(s));
}

function zkPort(s: BenchServers): number {
  return Number(s.zookeeper!.connectionString.split(':')[1]);
}

async function etcdCounters(url: string): Promise<Counters> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Counters = { requests: 0, durableWrites: 0, fsyncs: 0 };
  for (const line of text.split('\n')) {
    const handled = /^grpc_server_handled_total\{[^}]*grpc_method="(\w+)"[^}]*\} (\S+)$/.exec(line);
    if (handled && handled[1] !== 'LeaseKeepAlive' && handled[1] !== 'Watch') {
      out[handled[1]] = (out[handled[1]] ?? 0) + Number(handled[2]);
      out.requests += Number(handled[2]);
    }
    const received =
      /^grpc_server_msg_received_total\{[^}]*grpc_method="(Watch|LeaseKeepAlive)"[^}]*\} (\S+)$/.exec(
        line,
      );
    if (received) {
      // grpc.health.v1.Health has a Watch method too: sum over services.
      const k = `${received[1]} msg`;
      out[k] = (out[k] ?? 0) + Number(received[2]);
      out.requests += Number(received[2]);
    }
    const m =
      /^(etcd_server_proposals_committed_total|etcd_disk_wal_fsync_duration_seconds_count) (\S+)$/.exec(
        line,
      );
    if (m) out[m[1].startsWith('etcd_server') ? 'durableWrites' : 'fsyncs'] = Number(m[2]);
  }
  return out;
}

async function zkCounters(port: number): Promise<Counters> {
  const [mntr, srvr] = await Promise.all([fourLetter(port, 'mntr'), fourLetter(port, 'srvr')]);
  const num = (name: string) =>
    Number(new RegExp(`^${name}\\s+(\\S+)$`, 'm').exec(mntr)?.[1] ?? NaN);
  const zxid = /Zxid: 0x([0-9a-f]+)/.exec(srvr)?.[1] ?? '0';
  // The 4lw connections themselves are packets too: count them out in diff().
  return {
    requests: num('zk_packets_received'),
    durableWrites: Number(BigInt(`0x${zxid}`) & 0xffffffffn),
    fsyncs: num('zk_cnt_fsynctime'),
  };
}

/** after - before, per `per` operations; `requests` net of the probes' own packets (ZooKeeper). */
export function diff(
  system: CeilingSystem,
  before: Counters,
  after: Counters,
  per: number,
): Counters {
  const out: Counters = {};
  for (const k of Object.keys(after)) {
    const d = after[k] - (before[k] ?? 0);
    if (d !== 0) out[k] = d / per;
  }
  // mntr + srvr: one packet each per read, and etcd's /metrics is HTTP, not counted.
  if (system === 'zookeeper' && out.requests !== undefined) out.requests -= 2 / per;
  return out;
}

/**
 * The server's own sequential durable writes: `n` awaited writes from one client, one at a time.
 * etcd: PUTs of one key from an etcd3 client. ZooKeeper: create then delete of a persistent node
 * (each a logged, fsynced transaction). Resolves writes/s.
 */
export interface WriteSampler {
  sample(n: number): Promise<number>;
  close(): Promise<void>;
}

export async function writeSampler(system: CeilingSystem, s: BenchServers): Promise<WriteSampler> {
  if (system === 'etcd') {
    const client = new Etcd3({ hosts: s.etcd!.hosts() });
    let i = 0;
    return {
      async sample(n) {
        const t0 = performance.now();
        for (let k = 0; k < n; k++) await client.put('ceiling:put').value(String(i++));
        return n / ((performance.now() - t0) / 1000);
      },
      close: async () => client.close(),
    };
  }
  const client = await connectedZkClient(s.zookeeper!.connectionString, 10_000);
  let i = 0;
  return {
    async sample(n) {
      const t0 = performance.now();
      for (let k = 0; k < n; k += 2) {
        const path = `/ceiling-write-${i++}`;
        await zkCall((cb) => client.create(path, null, 0, cb));
        await zkCall((cb) => client.remove(path, -1, cb));
      }
      return n / ((performance.now() - t0) / 1000);
    },
    close: async () => client.close(),
  };
}

function zkCall(op: (cb: (error: unknown) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => op((e) => (e ? reject(e) : resolve())));
}

export type { ZooKeeperClientLike };
