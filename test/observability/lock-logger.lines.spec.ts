import { ConsoleLogger, Logger } from '@nestjs/common';
import { LockEventBus } from '../../lib/core/activity/lock-events';
import { LOCK_LOGGER_CONTEXT, subscribeLockLogger } from '../../lib/observability/lock-logger';

/**
 * The exact lines the lock logger writes through Nest's own ConsoleLogger. Before: every error was
 * followed by `ERROR [DistributedLock] undefined` and a bare `DistributedLock` line, and every
 * warning by `WARN [DistributedLock] DistributedLock` (the context passed to a Logger that has it).
 * Keys are printed escaped: a newline, U+2028 or a bidi override in a key cannot forge or reorder
 * a line.
 */
describe('lock logger: exact lines', () => {
  let lines: string[];
  const writes: jest.SpyInstance[] = [];
  beforeEach(() => {
    lines = [];
    Logger.overrideLogger(new ConsoleLogger({ colors: false, timestamp: false }));
    for (const stream of [process.stdout, process.stderr])
      writes.push(
        jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          return true;
        }),
      );
  });
  afterEach(() => {
    writes.splice(0).forEach((w) => w.mockRestore());
    Logger.overrideLogger(new ConsoleLogger());
  });
  // Nest's line: "[Nest] <pid>  - <date>     LEVEL [Context] message"; the pid and date vary.
  const shape = (l: string) => l.replace(/^\[Nest\] \d+\s+-\s+.*?\s+(LOG|WARN|ERROR|DEBUG)/, '$1');

  it('writes one line per event, with the context once and no stray lines', () => {
    const events = new LockEventBus();
    const stop = subscribeLockLogger(events, new Logger(LOCK_LOGGER_CONTEXT), 'log');
    const at = Date.now();
    events.emit({
      type: 'backendUnavailable',
      at,
      backend: 'default',
      operation: 'acquire',
      error: new Error('connect ECONNREFUSED'),
    } as never);
    events.emit({
      type: 'lost',
      at,
      backend: 'default',
      key: 'order:1',
      mode: 'exclusive',
      reason: 'renewal found it gone',
      heldMs: 1200,
      error: new Error('lost'),
    } as never);
    events.emit({ type: 'backendRecovered', at, backend: 'default', downMs: 950 } as never);
    stop();
    expect(lines.map(shape)).toEqual([
      'ERROR [DistributedLock] backend "default" unavailable (acquire): connect ECONNREFUSED',
      'WARN [DistributedLock] lost "order:1" after holding it 1200 ms: renewal found it gone',
      'LOG [DistributedLock] backend "default" answers again after 950 ms',
    ]);
  });

  it('escapes newlines, U+2028, bidi overrides and quotes in keys and error text', () => {
    const events = new LockEventBus();
    const stop = subscribeLockLogger(events, new Logger(LOCK_LOGGER_CONTEXT), 'log');
    events.emit({
      type: 'lost',
      at: Date.now(),
      backend: 'default',
      key: 'a\u202eb"\u2028c\u0085',
      mode: 'exclusive',
      reason: 'x\ny',
      heldMs: 5,
      error: new Error('lost'),
    } as never);
    stop();
    expect(lines.map(shape)).toEqual([
      'WARN [DistributedLock] lost "a\\u202eb\\"\\u2028c\\u0085" after holding it 5 ms: x\\u000ay',
    ]);
  });
});
