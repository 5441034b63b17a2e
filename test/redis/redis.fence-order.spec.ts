import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { redisProcesses } from './redis-fixture';

/**
 * A failover to a replica that missed the last grants leaves the key's fence counter behind the
 * tokens already handed out. Here the counter is set back by hand on a private server (what the
 * promoted replica holds); the next grant must still get a token above every earlier one, for a
 * lock, a semaphore permit and a multi-key grant.
 */
const PREFIX = 'fence-order:';
const procs = redisProcesses(PREFIX);

/** The fence counter as a replica that missed the last `behind` grants would have it. */
async function setFenceBack(key: string, token: bigint, behind = 3n): Promise<void> {
  await procs.admin.set(lockKeys(PREFIX + key).fence, String(token - behind));
}

describe('Redis fencing tokens across a lost fence counter (failover to a lagging replica)', () => {
  it('a lock grant after the fence counter went back gets a token above every earlier one', async () => {
    const { engine } = procs.processLike();
    const first = await engine.acquire('lock', { wait: 0 });
    const old = first.fencingToken;
    await first.release();
    await setFenceBack('lock', old);
    const next = await engine.acquire('lock', { wait: 0 });
    expect(next.fencingToken).toBeGreaterThan(old);
    await next.release();
  });

  it('a semaphore permit after the fence counter went back gets a token above every earlier one', async () => {
    const { engine } = procs.processLike();
    const first = await engine.acquire('permits', { wait: 0, permits: 2 });
    const old = first.fencingToken;
    await first.release();
    await setFenceBack('permits', old);
    const next = await engine.acquire('permits', { wait: 0, permits: 2 });
    expect(next.fencingToken).toBeGreaterThan(old);
    await next.release();
  });

  it('a multi-key grant after the fence counters went back gets tokens above every earlier one', async () => {
    const { engine } = procs.processLike();
    const first = await engine.acquire(['{m}a', '{m}b'], { wait: 0 });
    const old = first.fencingToken;
    await first.release();
    await setFenceBack('{m}a', old);
    await setFenceBack('{m}b', old);
    const next = await engine.acquire(['{m}a', '{m}b'], { wait: 0 });
    expect(next.fencingToken).toBeGreaterThan(old);
    await next.release();
  });

  it('tokens of successive grants of one key never repeat or go backwards', async () => {
    const { engine } = procs.processLike();
    let last = 0n;
    for (let i = 0; i < 50; i++) {
      const h = await engine.acquire('series', { wait: 0 });
      expect(h.fencingToken).toBeGreaterThan(last);
      last = h.fencingToken;
      await h.release();
    }
  });
});
