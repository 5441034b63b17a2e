import { QueuedWaiter, RedisHandoffs } from './redis.handoffs';

const waiter = () => {
  const got: string[] = [];
  return { got, deliver: (token: string) => void got.push(token) };
};

describe('RedisHandoffs', () => {
  it('routes a handoff to the waiter registered for its owner', () => {
    const h = new RedisHandoffs(() => undefined);
    const w = waiter();
    h.expect('a1', w);
    h.onMessage('a1|42');
    expect(w.got).toEqual(['42']);
  });

  it('keeps a handoff that came before its waiter registered, and delivers it at registration', () => {
    // The release script can run between our queueing and our reading of its reply: the message
    // (another connection) then arrives first. A waiter registers only after that reply.
    const giveBack = jest.fn();
    const h = new RedisHandoffs(giveBack);
    h.onMessage('b2|7');
    const w = waiter();
    h.expect('b2', w);
    expect(w.got).toEqual(['7']);
    // Delivered once: a later registration of the same owner gets nothing.
    const again = waiter();
    h.expect('b2', again);
    expect(again.got).toEqual([]);
    expect(giveBack).not.toHaveBeenCalled();
  });

  it('gives back a grant for a waiter that gave up, rather than keeping it', () => {
    const giveBack = jest.fn();
    const h = new RedisHandoffs(giveBack);
    const lock = { key: 'k', owner: 'c3', mode: 'exclusive' as const, ttl: 1_000 };
    h.abandon(lock, 60_000);
    h.onMessage('c3|9');
    expect(giveBack).toHaveBeenCalledWith(lock);
    const w = waiter();
    h.expect('c3', w);
    expect(w.got).toEqual([]);
  });

  it('keeps no re-check message for nobody, and drops early handoffs nobody claimed in time', () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    try {
      const h = new RedisHandoffs(() => undefined);
      h.onMessage('d4|');
      h.onMessage('e5|11');
      jest.advanceTimersByTime(10_001);
      h.onMessage('f6|12'); // a later early message sweeps the stale ones
      const d = waiter();
      const e = waiter();
      const f = waiter();
      h.expect('d4', d);
      h.expect('e5', e);
      h.expect('f6', f);
      expect([d.got, e.got, f.got]).toEqual([[], [], ['12']]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('a re-check message that comes between two attempts is kept: the next wait returns at once', async () => {
    // Our channel can go live while a waiter's first attempt is on its way; its re-check message
    // then comes before the engine waits. Lost, the waiter slept a whole RECHECK_MS unqueued.
    const w = new QueuedWaiter(performance.now() + 60_000);
    w.deliver();
    const never = new AbortController().signal;
    const first = await Promise.race([
      w.wait(60_000, never).then(() => 'woken'),
      new Promise((resolve) => setImmediate(() => resolve('asleep'))),
    ]);
    expect(first).toBe('woken');
    // The next attempt takes the news (redis.grants.ts), and a wait after it sleeps again.
    w.news = false;
    const controller = new AbortController();
    const second = Promise.race([
      w.wait(60_000, controller.signal).then(() => 'woken'),
      new Promise((resolve) => setImmediate(() => resolve('asleep'))),
    ]);
    expect(await second).toBe('asleep');
    controller.abort();
  });
});
