import type { Socket } from 'node:net';
import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import type { BackendLock, LockMode } from '../../lib/interfaces/lock-backend.interface';
import { serveJsonLines, type JsonMessage } from './json-lines.channel';

/**
 * The memory backend keeps its locks in one process, so a multi-process torture run hosts one real
 * MemoryLockBackend here and workers reach it through MemoryRemoteBackend (memory-remote.backend.ts),
 * a thin relay of the backend contract over JSON lines. Its state dies with this process, like the
 * memory backend's own: the nemesis never restarts it.
 *
 * Usage: node -r ts-node/register/transpile-only memory-lock.server.ts <port>
 */
const backend = new MemoryLockBackend();
const port = Number(process.argv[2]);
const waits = new Map<Socket, Map<number, AbortController>>();

function lockOf(m: JsonMessage): BackendLock {
  return {
    key: String(m.key),
    owner: String(m.owner),
    mode: m.mode as LockMode,
    ttl: Number(m.ttl),
  };
}

/** The lock contract, or the semaphore's for a permit (`permits` on acquire, `permit` on the rest). */
const holderOf = (m: JsonMessage) => (m.permit === true ? backend.semaphore : backend);

void serveJsonLines(
  port,
  async (m, socket) => {
    const mine = waits.get(socket) ?? new Map<number, AbortController>();
    switch (m.type) {
      case 'acquire': {
        const controller = new AbortController();
        mine.set(m.id as number, controller);
        const request = { ...lockOf(m), signal: controller.signal, onLost: () => undefined };
        const result =
          m.permits === undefined
            ? await backend.tryAcquire(request)
            : await backend.semaphore.tryAcquire(request, Number(m.permits));
        mine.delete(m.id as number);
        // The client is gone (connection cut): nobody will use this grant, give it back.
        const holder = m.permits === undefined ? backend : backend.semaphore;
        if (result.acquired && socket.destroyed) await holder.release(lockOf(m));
        return result.acquired
          ? { acquired: true, fencingToken: result.fencingToken.toString() }
          : { acquired: false, retryAfter: result.retryAfter };
      }
      case 'cancel':
        mine.get(m.target as number)?.abort();
        return undefined;
      case 'renew':
        return { results: await holderOf(m).renew((m.locks as JsonMessage[]).map(lockOf)) };
      case 'release':
        await holderOf(m).release(lockOf(m));
        return { ok: true };
      default:
        throw new Error(`unknown request ${String(m.type)}`);
    }
  },
  (socket) => {
    waits.set(socket, new Map());
    // A dropped client cancels its waits, as a crashed process's waits end with it.
    socket.on('close', () => {
      for (const c of waits.get(socket)?.values() ?? []) c.abort();
      waits.delete(socket);
    });
  },
);
