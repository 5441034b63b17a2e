import { EventEmitter } from 'node:events';
import { reconnectAfterSentinelRace } from './sentinel-reconnect';

/**
 * The decision only: which endings of a client are ioredis's Sentinel race (reconnected) and which
 * are its owner's or its configuration's (left alone). The race itself, with real sentinels and a
 * real failover, is in test/redis/redis.sentinel-fencing.spec.ts. Events are emitted as ioredis's
 * setStatus() names them.
 */
class Client extends EventEmitter {
  status = 'ready';
  manuallyClosing = false;
  connect = jest.fn(async () => undefined);
  constructor(readonly options: Record<string, unknown>) {
    super();
  }
  go(...statuses: string[]): void {
    for (const s of statuses) {
      this.status = s;
      this.emit(s);
    }
  }
}

const retry = () => 50;
const sentinelOptions = {
  sentinels: [{ port: 26379 }],
  failoverDetector: true,
  retryStrategy: retry,
  sentinelRetryStrategy: retry,
};

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('reconnectAfterSentinelRace', () => {
  it('connects again a client that went from connecting to end on its own, once per client', () => {
    const c = new Client(sentinelOptions);
    reconnectAfterSentinelRace(c);
    reconnectAfterSentinelRace(c);
    c.go('close', 'reconnecting', 'connecting', 'end');
    expect(c.connect).not.toHaveBeenCalled();
    jest.advanceTimersByTime(50);
    expect(c.connect).toHaveBeenCalledTimes(1);
  });

  it('leaves a client its owner closed: disconnect() while connecting, quit() or disconnect() when up', () => {
    const whileConnecting = new Client(sentinelOptions);
    reconnectAfterSentinelRace(whileConnecting);
    whileConnecting.go('connecting');
    whileConnecting.manuallyClosing = true;
    whileConnecting.go('end');
    const whenUp = new Client(sentinelOptions);
    reconnectAfterSentinelRace(whenUp);
    whenUp.go('connecting', 'connect', 'ready', 'close', 'end');
    jest.advanceTimersByTime(1_000);
    expect(whileConnecting.connect).not.toHaveBeenCalled();
    expect(whenUp.connect).not.toHaveBeenCalled();
  });

  it('leaves a client closed between the ending and the retry', () => {
    const c = new Client(sentinelOptions);
    reconnectAfterSentinelRace(c);
    c.go('connecting', 'end');
    c.manuallyClosing = true;
    jest.advanceTimersByTime(50);
    expect(c.connect).not.toHaveBeenCalled();
  });

  it('watches only Sentinel clients with the failover detector that were asked to retry', () => {
    const others = [
      { ...sentinelOptions, failoverDetector: false },
      { ...sentinelOptions, sentinels: undefined },
      { ...sentinelOptions, retryStrategy: null },
      { ...sentinelOptions, sentinelRetryStrategy: null },
    ].map((o) => new Client(o));
    for (const c of others) {
      reconnectAfterSentinelRace(c);
      expect(c.listenerCount('end')).toBe(0);
    }
  });
});
