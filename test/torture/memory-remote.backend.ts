import type {
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
  SemaphoreBackend,
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
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.attempt(request, undefined);
  }

  /** The hosted MemoryLockBackend grants semaphores natively; permits are its semaphore's. */
  readonly semaphore: SemaphoreBackend = {
    tryAcquire: (request, permits) => this.attempt(request, permits),
    renew: (permits) => this.renewAll(permits, true),
    release: (permit) => this.releaseOne(permit, true),
  };

  private async attempt(
    request: BackendAttempt,
    permits: number | undefined,
  ): Promise<BackendAcquireResult> {
    const { key, owner, mode, ttl } = request;
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

  renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    return this.renewAll(locks, false);
  }

  private async renewAll(locks: readonly BackendLock[], permit: boolean): Promise<boolean[]> {
    const m = await this.client.call({
      type: 'renew',
      permit,
      locks: locks.map((l) => ({ ...l }) as unknown as JsonMessage),
    }).answer;
    return m.results as boolean[];
  }

  release(lock: BackendLock): Promise<void> {
    return this.releaseOne(lock, false);
  }

  private async releaseOne(lock: BackendLock, permit: boolean): Promise<void> {
    await this.client.call({ type: 'release', permit, ...lock }).answer;
  }

  async close(): Promise<void> {
    this.client.close();
  }
}
