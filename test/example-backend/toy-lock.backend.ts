import { createConnection, type Socket } from 'node:net';
// A third party writes: from 'nestjs-distributed-lock/backend-kit'
import {
  checkInteger,
  checkOptionsObject,
  checkString,
  LockBackendUnavailableError,
  MAX_KEY_LENGTH,
  ReleaseNotifier,
  toBigInt,
  type BackendAcquireResult,
  type BackendAttempt,
  type BackendLock,
  type LockBackend,
  type LockBackendCapabilities,
} from '../../lib/backend-kit';

export interface ToyLockBackendOptions {
  /** Port of the toy lock server on `host`. */
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
}

interface Reply {
  id: number;
  ok: boolean;
  token?: string;
  retryAfter?: number;
}

/**
 * The example backend of docs/writing-a-backend.md, over the toy JSON-lines server in this folder.
 *
 * Algorithm: one request per operation; the server decides each one atomically (acquire = "free,
 * expired or ours? then take it with a new token"; renew and release check the owner). The core
 * runs every wait on top of `tryAcquire`, woken by the server's `released` pushes (fed into a
 * ReleaseNotifier) or by the busy answer's retryAfter. Safety: the server is the single point of
 * decision; the watchdog renews before the ttl ends, so a holder that cannot reach the server
 * loses the lock (its handle's signal aborts) no later than the server frees it. Tokens come from
 * a per-key counter on the server: strict fencing. No shared mode (the suite asserts the core
 * rejects it).
 */
export class ToyLockBackend implements LockBackend {
  readonly name = 'toy';
  readonly capabilities: LockBackendCapabilities = {
    shared: false,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: MAX_KEY_LENGTH,
  };
  readonly wakeups = new ReleaseNotifier();
  private readonly port: number;
  private readonly host: string;
  private readonly pending = new Map<number, { resolve(r: Reply): void; reject(e: Error): void }>();
  private socket: Socket | undefined;
  private nextId = 0;

  constructor(options: ToyLockBackendOptions) {
    const o = checkOptionsObject<ToyLockBackendOptions>('ToyLockBackend options', options, [
      'port',
      'host',
    ]);
    this.port = checkInteger('port', o.port, 1, 65_535);
    this.host = checkString('host', o.host, '127.0.0.1');
  }

  async tryAcquire(attempt: BackendAttempt): Promise<BackendAcquireResult> {
    const r = await this.call('acquire', attempt);
    if (!r.ok) return { acquired: false, retryAfter: r.retryAfter };
    return { acquired: true, fencingToken: toBigInt(r.token, this.name) };
  }

  renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    return Promise.all(locks.map(async (lock) => (await this.call('renew', lock)).ok));
  }

  async release(lock: BackendLock): Promise<void> {
    await this.call('release', lock);
  }

  async close(): Promise<void> {
    this.socket?.destroy();
    this.wakeups.notifyAll();
  }

  private call(op: string, { key, owner, ttl }: BackendLock): Promise<Reply> {
    const id = ++this.nextId;
    const socket = this.connection();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      socket.write(`${JSON.stringify({ id, op, key, owner, ttl })}\n`);
    });
  }

  /** The open connection, or a new one; a broken one fails its pending calls and is replaced. */
  private connection(): Socket {
    if (this.socket) return this.socket;
    const socket = createConnection({ port: this.port, host: this.host });
    this.socket = socket;
    let buffered = '';
    socket.on('connect', () => this.wakeups.notifyAll()); // pushes may have been missed meanwhile
    socket.on('data', (chunk) => {
      const lines = (buffered + chunk.toString()).split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const m = JSON.parse(line) as Reply & { event?: string; key?: string };
        if (m.event === 'released') this.wakeups.notify(m.key as string);
        else this.pending.get(m.id)?.resolve(m);
        this.pending.delete(m.id);
      }
    });
    const fail = (cause?: Error) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      socket.destroy();
      const error = new LockBackendUnavailableError(this.name, 'connection lost', { cause });
      for (const { reject } of this.pending.values()) reject(error);
      this.pending.clear();
    };
    socket.on('error', fail);
    socket.on('close', () => fail());
    return socket;
  }
}
