import { holderMetadata } from '../../backend-kit';
import type { LockInspection } from '../../interfaces/lock-backend.interface';
import type { EtcdClientLike } from './etcd.client';

/**
 * Who holds this backend's locks: ONE key per session, `<prefix>\0holder:<lease hex>`, whose value
 * is the holder data (host, pid, instance) and which lives on the session's lease (it goes with the
 * session, as every contender key does). So the lock keys keep etcdctl's layout (`NAME/<lease>`,
 * empty value) and an acquire writes nothing more; inspect() finds a holder's identity by the lease
 * its key is on. The key holds no `/`, so it is no lock's contender and list() never shows it.
 */
export function holderKey(etcdPrefix: string, leaseHex: string): Buffer {
  return Buffer.from(`${etcdPrefix}\u0000holder:${leaseHex}`);
}

/** Writes the session's holder key (once per session, beside the acquire that made it). */
export async function announceHolder(
  client: EtcdClientLike,
  etcdPrefix: string,
  session: { readonly id: string; readonly hex: string },
  data: string,
  deadline: number,
): Promise<void> {
  await client.kv.txn(
    {
      compare: [],
      success: [
        {
          request_put: {
            key: holderKey(etcdPrefix, session.hex),
            value: Buffer.from(data),
            lease: session.id,
          },
        },
      ],
      failure: [],
    },
    { deadline },
  );
}

/**
 * `lock` with each holder's identity (metadata host, pid, instance), read from the holder keys of
 * their leases in one transaction; holders of other clients (etcdctl, Go) have none.
 */
export async function withHolders(
  client: EtcdClientLike,
  etcdPrefix: string,
  lock: LockInspection,
  deadline: number,
): Promise<LockInspection> {
  const leases = lock.holders.map((h) => h.metadata?.lease ?? '');
  const res = await client.kv.txn(
    {
      compare: [],
      success: leases.map((lease) => ({
        request_range: { key: holderKey(etcdPrefix, lease) },
      })),
      failure: [],
    },
    { deadline },
  );
  const holders = lock.holders.map((h, i) => {
    const found = holderMetadata(res.responses[i]?.response_range.kvs[0]?.value);
    return found ? { ...h, metadata: { ...found, ...h.metadata } } : h;
  });
  return { ...lock, holders };
}
