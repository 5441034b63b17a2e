/**
 * One worker process of the etcd semaphore spec. argv: hosts (comma-separated), key, permits,
 * rounds. Each round: acquire a seat (waiting), send `enter`, hold briefly, send `exit` and wait
 * for the parent's `ack` before releasing, so the parent's count of holders is never behind a
 * release (the parent counts at most N inside only if at most N really hold). Ends with `done`.
 */
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';

const [hosts, key, permits, rounds] = process.argv.slice(2);

function acked(worker: number): Promise<void> {
  return new Promise((resolve) => {
    const on = (m: { type: string; worker?: number }) => {
      if (m.type !== 'ack' || m.worker !== worker) return;
      process.off('message', on);
      resolve();
    };
    process.on('message', on);
  });
}

async function main(): Promise<void> {
  const client = new Etcd3({ hosts: hosts.split(',') });
  const backend = new EtcdLockBackend({ client, sessionTtl: 5_000 });
  const engine = new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 5_000, wait: 60_000 } });
  const worker = async (w: number) => {
    for (let i = 0; i < Number(rounds); i++) {
      const h = await engine.acquire(key, { permits: Number(permits) });
      process.send?.({ type: 'enter', token: String(h.fencingToken) });
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 15));
      const ack = acked(w);
      process.send?.({ type: 'exit', worker: w });
      await ack;
      await h.release();
    }
  };
  // Two owners per process: seats of one process queue on etcd independently.
  await Promise.all([worker(0), worker(1)]);
  await engine.close();
  client.close();
  process.send?.({ type: 'done' });
}

main().catch((error: unknown) => {
  process.send?.({ type: 'error', error: String(error) });
  process.exitCode = 1;
});
