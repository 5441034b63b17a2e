import { randomBytes } from 'node:crypto';
import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { RedlockMasters } from './redlock.servers';

/**
 * Regression: a waiter that waited longer than its ttl lost its lock right after the grant, because
 * the engine counted the grant's validity from the start of the wait (LockEngine.acquireOrNull takes
 * min(result.validity, safeValidity(ttl)) from `startedAt`, taken before backend.acquire). Not
 * Redlock-specific: the memory backend shows the same. Fixed in the core, not in a backend.
 */
const TTL = 400;
let masters: RedlockMasters;

beforeAll(async () => {
  masters = await RedlockMasters.start(3);
});

afterAll(async () => masters?.destroy());

async function waiterKeepsLock(makeBackend: () => LockBackend | Promise<LockBackend>) {
  const backend = await makeBackend();
  const engine = new LockEngine({ backend, keyPrefix: 'long:' });
  const k = `wait:${randomBytes(4).toString('hex')}`;
  try {
    const first = await engine.runInScope(() => engine.acquire(k, { ttl: TTL }));
    const handOver = new Promise<void>((resolve) =>
      setTimeout(() => resolve(first.release()), 3 * TTL),
    ); // the scenario: held for 3 x ttl
    const waiter = await engine.runInScope(() => engine.acquire(k, { ttl: TTL, wait: 10_000 }));
    await handOver;
    // One ttl after the grant, the watchdog has renewed it (every ttl/3); it must still be ours.
    await new Promise((r) => setTimeout(r, TTL));
    expect(waiter.signal.aborted).toBe(false);
    expect(waiter.held).toBe(true);
    await waiter.release();
  } finally {
    await engine.close();
  }
}

describe('a waiter that waited longer than its ttl keeps its lock after the grant', () => {
  it('redlock', () => waiterKeepsLock(() => masters.backend()));
  it('memory (the same engine path)', () => waiterKeepsLock(() => new MemoryLockBackend()));
});
