import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
} from '../../lib/interfaces/lock-backend.interface';
import { JsonLinesClient, type JsonMessage } from './json-lines.channel';

/**
 * Test-only relay of the backend contract to the MemoryLockBackend hosted by memory-lock.server.ts,
 * so that torture workers in separate processes share one in-process lock table. Each call is one
 * request; a cut connection fails the calls in flight (the core turns that into
 * LockBackendUnavailableError), and the next call reconnects.
 */
export class MemoryRemoteBackend implements LockBackend {
  readonly name = 'memory';
  readonly capabilities: LockBackendCapabilities = { shared: true, fencing: 'strict', sessionBased: false, maxKeyLength: 512 };
  private readonly client: JsonLinesClient;

  constructor(port: number) {
    this.client = new JsonLinesClient(port);
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    const { key, owner, mode, ttl, wait, signal } = request;
    const { id, answer } = this.client.call({ type: 'acquire', key, owner, mode, ttl, wait });
    const cancel = () => this.client.notify({ type: 'cancel', target: id });
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const m = await answer;
      return m.acquired ? { acquired: true, fencingToken: BigInt(m.fencingToken as string) } : { acquired: false, retryAfter: m.retryAfter as number | undefined };
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    const m = await this.client.call({ type: 'renew', locks: locks.map((l) => ({ ...l }) as unknown as JsonMessage) }).answer;
    return m.results as boolean[];
  }

  async release(lock: BackendLock): Promise<void> {
    await this.client.call({ type: 'release', ...lock }).answer;
  }

  async close(): Promise<void> {
    this.client.close();
  }
}
