import type {
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
} from '../../lib/backend-kit';
import { JsonLinesClient, type JsonMessage } from './json-lines.channel';

/**
 * Test-only relay of the backend contract to the MemoryLockBackend hosted by memory-lock.server.ts,
 * so that torture workers in separate processes share one in-process lock table. Each call is one
 * request; a cut connection fails the calls in flight (the core turns that into
 * LockBackendUnavailableError), and the next call reconnects. Waiting polls (no release push).
 */
export class MemoryRemoteBackend implements LockBackend {
  readonly name = 'memory';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: 512,
    // The hosted MemoryLockBackend grants semaphores natively; permits travel with every call.
    semaphore: true,
  };
  private readonly client: JsonLinesClient;

  constructor(port: number) {
    this.client = new JsonLinesClient(port);
  }

  /** The engine polls (no release push), quickly: the server is on loopback. */
  readonly waitPolicy = { minDelay: 5, maxDelay: 100 };

  /**
   * Try-once requests in the engine's own wait loop (as the SQL backends poll), so the grant's
   * validity is dated by this process's clock from the request that won it.
   */
  async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    const { key, owner, mode, ttl, permits } = request;
    const m = await this.client.call({
      type: 'acquire',
      key,
      owner,
      mode,
      ttl,
      wait: 0,
      ...(permits === undefined ? {} : { permits }),
    }).answer;
    return m.acquired
      ? { acquired: true, fencingToken: BigInt(m.fencingToken as string) }
      : { acquired: false, retryAfter: m.retryAfter as number | undefined };
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    const m = await this.client.call({
      type: 'renew',
      locks: locks.map((l) => ({ ...l }) as unknown as JsonMessage),
    }).answer;
    return m.results as boolean[];
  }

  async release(lock: BackendLock): Promise<void> {
    await this.client.call({ type: 'release', ...lock }).answer;
  }

  async close(): Promise<void> {
    this.client.close();
  }
}
