/**
 * Lock directories this process knows to exist, per client (session), so an acquire creates only
 * its own node and not, every time, its directory too: ZooKeeper logs a failed write (NODE_EXISTS)
 * as a transaction like any other, so the pipelined "create the directory if missing" cost a
 * durable write per acquire. A directory enters when a create under it succeeded and leaves when
 * we delete it, or when a create under it answers NO_NODE (another client deleted it: the create
 * then makes the directory first, as before). Bounded: past MAX_KNOWN the set starts over.
 */
const MAX_KNOWN = 4_096;
const known = new WeakMap<object, Set<string>>();

export const lockDirs = {
  has(client: object, dir: string): boolean {
    return known.get(client)?.has(dir) ?? false;
  },
  add(client: object, dir: string): void {
    let set = known.get(client);
    if (!set) known.set(client, (set = new Set()));
    if (set.size >= MAX_KNOWN) set.clear();
    set.add(dir);
  },
  forget(client: object, dir: string): void {
    known.get(client)?.delete(dir);
  },
};
