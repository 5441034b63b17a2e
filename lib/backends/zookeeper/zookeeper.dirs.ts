/**
 * Lock directories this process knows to exist, per client (session), so an acquire creates only
 * its own node and not, every time, its directory too: ZooKeeper logs a failed write (NODE_EXISTS)
 * as a transaction like any other, so the pipelined "create the directory if missing" cost a
 * durable write per acquire. A directory enters when a create under it succeeded and leaves when
 * we delete it, or when a create under it answers NO_NODE (another client deleted it: the create
 * then makes the directory first, as before). Bounded: past MAX_KNOWN the set starts over.
 *
 * A directory a release left empty is not deleted at once but after it stayed unused here for
 * IDLE_DIR_MS: a hot key's next cycle then costs its node's create and delete only, not the
 * directory's delete and create again (two of four writes). Curator and kazoo never delete lock
 * directories; we still do, so they do not pile up (one per key ever used): one sweep per client
 * at most every IDLE_DIR_MS, and all of a session's when it closes. The delete is ZooKeeper's own
 * "only if empty": NOT_EMPTY (another process queued there meanwhile) leaves it, and a create
 * that finds it gone makes it again.
 */
const MAX_KNOWN = 4_096;
export const IDLE_DIR_MS = 5_000;

/** A directory's identity (its czxid: a recreated one has another) and its children version. */
export interface DirVersion {
  readonly czxid: bigint;
  readonly cversion: number;
}

interface Dirs {
  readonly known: Set<string>;
  /** Each known directory's last listing answered here: its czxid and children version. */
  readonly cversions: Map<string, DirVersion>;
  /** Empty directories (with the parents to delete after each, a semaphore's) and since when. */
  readonly idle: Map<string, { readonly parents: readonly string[]; readonly since: number }>;
  sweep?: ReturnType<typeof setTimeout>;
}

/** The client's `remove(path, version, callback)`; structural, as the driver has no types. */
interface Remover {
  remove(path: string, version: number, callback: (error: unknown) => void): void;
}

const byClient = new WeakMap<object, Dirs>();
const dirsOf = (client: object): Dirs => {
  let dirs = byClient.get(client);
  if (!dirs)
    byClient.set(client, (dirs = { known: new Set(), cversions: new Map(), idle: new Map() }));
  return dirs;
};

export const lockDirs = {
  has(client: object, dir: string): boolean {
    return byClient.get(client)?.known.has(dir) ?? false;
  },
  /** A create under `dir` succeeded: it exists, and it is in use again. */
  add(client: object, dir: string): void {
    const dirs = dirsOf(client);
    if (dirs.known.size >= MAX_KNOWN) {
      dirs.known.clear();
      dirs.cversions.clear();
    }
    dirs.known.add(dir);
    dirs.idle.delete(dir);
  },
  forget(client: object, dir: string): void {
    byClient.get(client)?.known.delete(dir);
    byClient.get(client)?.cversions.delete(dir);
  },
  /** A listing of a known `dir` answered with this version. */
  listed(client: object, dir: string, version: DirVersion | undefined): void {
    const dirs = byClient.get(client);
    if (version && dirs?.known.has(dir)) dirs.cversions.set(dir, version);
  },
  /** The version of `dir` in the last listing answered here, if known. */
  version(client: object, dir: string): DirVersion | undefined {
    return byClient.get(client)?.cversions.get(dir);
  },
  /** A release saw `dir` empty: delete it (then `parents`) once it stayed unused IDLE_DIR_MS. */
  idle(client: Remover, dir: string, parents: readonly string[]): void {
    const dirs = dirsOf(client);
    dirs.idle.delete(dir); // re-inserted last: the map stays in `since` order
    dirs.idle.set(dir, { parents, since: performance.now() });
    dirs.sweep ??= setTimeout(() => sweep(client, dirs), IDLE_DIR_MS).unref();
  },
  /** The session closes: its empty directories are deleted now (the requests precede its close). */
  flush(client: Remover): void {
    const dirs = byClient.get(client);
    if (!dirs) return;
    if (dirs.sweep) clearTimeout(dirs.sweep);
    byClient.delete(client);
    sweep(client, dirs, Infinity);
  },
};

/** Deletes the directories idle since `due` or before; re-arms for the next one. */
function sweep(client: Remover, dirs: Dirs, due = performance.now() - IDLE_DIR_MS): void {
  dirs.sweep = undefined;
  for (const [dir, { parents, since }] of dirs.idle) {
    if (since > due) {
      dirs.sweep = setTimeout(() => sweep(client, dirs), since - due).unref();
      return;
    }
    dirs.idle.delete(dir);
    for (const d of [dir, ...parents]) {
      dirs.known.delete(d);
      dirs.cversions.delete(d);
      try {
        // NOT_EMPTY (in use elsewhere) or NO_NODE: fine, either way.
        client.remove(d, -1, () => undefined);
      } catch {
        return; // a closed client: nothing more to do
      }
    }
  }
}
