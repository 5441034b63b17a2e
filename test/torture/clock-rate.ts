/**
 * The clock nemesis, inside a worker: this process's clocks run at `rate` x real time while it is
 * set (0.99: one real second reads as 0.99 s; a slow clock). performance.now and Date.now run at the
 * rate, and setTimeout / setInterval delays are stretched by 1 / rate, so the library's deadlines,
 * its watchdog and its drivers' timeouts all see the same skewed time, as they would on a host whose
 * oscillator drifts. Changing the rate keeps the clocks continuous and monotonic. Timers armed
 * before a change keep their old real-time schedule. The worker's history keeps the real clock
 * (history.types.ts captured it before this runs).
 */
export interface ClockControl {
  readonly rate: number;
  setRate(rate: number): void;
}

export function installClockRate(): ClockControl {
  const realPerfNow = performance.now.bind(performance);
  const realDateNow = Date.now.bind(Date);
  const realSetTimeout = globalThis.setTimeout;
  const realSetInterval = globalThis.setInterval;
  const dateOffset = realDateNow() - realPerfNow();
  let rate = 1;
  let baseReal = realPerfNow();
  let baseVirtual = baseReal;
  const virtual = () => baseVirtual + (realPerfNow() - baseReal) * rate;
  Object.defineProperty(performance, 'now', {
    value: virtual,
    configurable: true,
    writable: true,
  });
  Date.now = () => Math.floor(dateOffset + virtual());
  const stretch = (ms: unknown) => (typeof ms === 'number' && ms > 0 ? ms / rate : ms);
  globalThis.setTimeout = Object.assign(
    (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      realSetTimeout(fn, stretch(ms) as number, ...args),
    realSetTimeout,
  ) as typeof setTimeout;
  globalThis.setInterval = Object.assign(
    (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      realSetInterval(fn, stretch(ms) as number, ...args),
    realSetInterval,
  ) as typeof setInterval;
  return {
    get rate() {
      return rate;
    },
    setRate(next: number) {
      if (!(next > 0)) throw new Error(`clock rate must be > 0 (got ${next})`);
      baseVirtual = virtual();
      baseReal = realPerfNow();
      rate = next;
    },
  };
}
