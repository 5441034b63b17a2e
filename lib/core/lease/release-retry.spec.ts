import { MemoryLockBackend } from '../../backends/memory/memory.backend';
import type { BackendLock } from '../../interfaces/lock-backend.interface';
import type { LockEvent } from '../activity/lock-events';
import { LockEngine } from '../lock-engine';

/** A memory backend whose next `failures` releases fail (a failover, a slot migration). */
class FlakyReleaseBackend extends MemoryLockBackend {
  failures = 0;
  releases = 0;
  override async release(lock: BackendLock): Promise<void> {
    this.releases++;
    if (this.failures > 0) {
      this.failures--;
      throw new Error('Too many Cluster redirections');
    }
    return super.release(lock);
  }
}

function engineWith(backend: FlakyReleaseBackend, operationTimeout?: number) {
  const events: LockEvent[] = [];
  const engine = new LockEngine({ backend, operationTimeout, onEvent: (e) => events.push(e) });
  const next = (type: LockEvent['type']) =>
    new Promise<LockEvent>((resolve) => {
      const seen = events.find((e) => e.type === type);
      if (seen) return resolve(seen);
      const off = engine.events.on((e) => {
        if (e.type !== type) return;
        off();
        resolve(e);
      });
    });
  return { engine, events, next };
}

describe('a failed release is retried in the background', () => {
  it('frees the key well before its ttl once the backend answers again, and says so', async () => {
    const backend = new FlakyReleaseBackend();
    const { engine, next } = engineWith(backend);
    const h = await engine.acquire('k', { ttl: 30_000 });
    backend.failures = 3;
    // The holder's release settles with its first attempt: it is not kept waiting for the retries.
    await expect(h.release()).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    expect(await next('releaseFailed')).toMatchObject({ key: 'k', during: 'release' });
    const retried = await next('releaseRetried');
    expect(retried).toMatchObject({ key: 'k', outcome: 'released', attempts: 3 });
    // Freed long before its 30 s ttl: the next caller gets it at once.
    const again = await engine.acquire('k', { wait: 0 });
    expect(again.fencingToken).toBeGreaterThan(h.fencingToken);
    await again.release();
    await engine.close();
  });

  it('gives up once the lease ttl has passed (the server dropped the key by itself)', async () => {
    const backend = new FlakyReleaseBackend();
    const { engine, next } = engineWith(backend);
    const h = await engine.acquire('k', { ttl: 400 });
    backend.failures = 1_000;
    await h.release().catch(() => undefined);
    const retried = await next('releaseRetried');
    expect(retried).toMatchObject({ outcome: 'expired' });
    const attempts = (retried as { attempts: number }).attempts;
    expect(attempts).toBeGreaterThan(0);
    // No attempt after the series ended.
    const released = backend.releases;
    await new Promise((r) => setTimeout(r, 1_200)); // would be at least one more retry (≤ 1 s apart)
    expect(backend.releases).toBe(released);
    await engine.close();
  });

  it('stops on a release that answers "not ours" (owner-checked: another owner holds it now)', async () => {
    const backend = new FlakyReleaseBackend();
    const { engine, next } = engineWith(backend);
    const h = await engine.acquire('k', { ttl: 30_000 });
    backend.failures = 1;
    await h.release().catch(() => undefined);
    // Meanwhile an operator freed it and someone else took it: the retry must not free theirs.
    await engine.operator.forceRelease('k');
    const other = await engine.acquire('k', { wait: 0 });
    expect(await next('releaseRetried')).toMatchObject({ outcome: 'released' });
    expect(other.held).toBe(true);
    expect(await engine.tryAcquire('k')).toBeNull();
    await other.release();
    await engine.close();
  });

  it('close() ends the retries with one last attempt, within its budget', async () => {
    const backend = new FlakyReleaseBackend();
    const { engine, next } = engineWith(backend, 500);
    const h = await engine.acquire('k', { ttl: 30_000 });
    backend.failures = 1_000;
    await h.release().catch(() => undefined);
    await next('releaseFailed');
    await engine.close();
    expect(await next('releaseRetried')).toMatchObject({ outcome: 'shutdown' });
  });
});
