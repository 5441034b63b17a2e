/**
 * One worker process of the etcd semaphore spec (started with test/support/holder-harness.ts).
 * Arguments: hosts (comma-separated), key, permits, rounds. Each round: acquire a permit (waiting),
 * report `enter`, hold briefly, report `exit` and wait for the parent's `ack` before releasing, so
 * the parent's count of holders is never behind a release (the parent counts at most N inside
 * only if at most N really hold). Ends with `done`.
 */
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import { runHolder } from '../support/holder-harness';

const [hosts, key, permits, rounds] = process.argv.slice(2);

runHolder(async ({ send, onCommand }) => {
  const acks = new Map<number, () => void>();
  onCommand((m) => {
    if (m.type === 'ack') acks.get(m.worker as number)?.();
  });
  const acked = (worker: number) =>
    new Promise<void>((resolve) => acks.set(worker, () => (acks.delete(worker), resolve())));
  const client = new Etcd3({ hosts: hosts.split(',') });
  const backend = new EtcdLockBackend({ client, sessionTtl: 5_000 });
  const engine = new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 5_000, wait: 60_000 } });
  const worker = async (w: number) => {
    for (let i = 0; i < Number(rounds); i++) {
      const h = await engine.acquire(key, { permits: Number(permits) });
      send({ type: 'enter', token: String(h.fencingToken) });
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 15));
      const ack = acked(w);
      send({ type: 'exit', worker: w });
      await ack;
      await h.release();
    }
  };
  // Two owners per process: permits of one process queue on etcd independently.
  await Promise.all([worker(0), worker(1)]);
  await engine.close();
  client.close();
  send({ type: 'done' });
});
