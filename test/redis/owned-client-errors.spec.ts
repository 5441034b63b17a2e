import { createServer } from 'node:net';
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { eventually } from '../support/eventually';

/**
 * A client the backend made (clientFactory) gets an `error` listener. Before, it had none and
 * ioredis printed "[ioredis] Unhandled error event" on every reconnect attempt while the server
 * was away; the outage reaches the operator through the lock logger instead.
 */
describe('redis and redlock: owned clients do not spam unhandled error events', () => {
  it('no "[ioredis] Unhandled error event" while the server is unreachable', async () => {
    // Ports nothing listens on (bound, noted, closed), one per Redlock master.
    const ports: number[] = [];
    for (let i = 0; i < 3; i++) {
      const probe = createServer();
      await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
      ports.push((probe.address() as { port: number }).port);
      await new Promise<void>((r) => probe.close(() => r()));
    }
    const printed: string[] = [];
    const spy = jest.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      printed.push(args.map(String).join(' '));
    });
    const made: Redis[] = [];
    let reconnects = 0;
    const client = (port = ports[0]) => {
      const c = new Redis({
        port,
        host: '127.0.0.1',
        maxRetriesPerRequest: 0,
        retryStrategy: () => 20,
      });
      c.on('reconnecting', () => reconnects++); // (not an 'error' listener: that would hide the bug)
      made.push(c);
      return c;
    };
    const engines = [
      new LockEngine({
        backend: new RedisLockBackend({ clientFactory: () => client() }),
        operationTimeout: 300,
      }),
      new LockEngine({
        backend: new RedlockBackend({ clientFactory: () => ports.map((p) => client(p)) }),
        operationTimeout: 300,
      }),
    ];
    const failures: unknown[] = [];
    for (const e of engines) await e.tryAcquire('k').catch((error) => failures.push(error));
    // Two failed reconnect attempts per client, each one an 'error' ioredis would print unhandled.
    await eventually(async () => reconnects >= 2 * made.length, 10_000);
    spy.mockRestore();
    await Promise.all(engines.map((e) => e.close()));
    made.forEach((c) => c.disconnect());
    expect(failures).toHaveLength(2);
    // ioredis prints an 'error' nobody listens to: every client the backends made has a listener.
    expect(made.map((c) => c.listenerCount('error') > 0)).toEqual(made.map(() => true));
    expect(printed.filter((l) => l.includes('Unhandled error event'))).toEqual([]);
  });
});
