import { parseDuration, parseTortureArgs, UsageError } from './torture.options';

/** Bad input to the harness is a clear usage error naming the flag, the value and what is allowed. */
describe('torture options', () => {
  const base = ['--backend', 'memory', '--duration', '20s'];

  it('parses a full command line', () => {
    expect(
      parseTortureArgs([
        '--backend',
        'redis',
        '--workers',
        '8',
        '--duration',
        '60s',
        '--faults',
        'kill,pause',
        '--seed',
        '7',
        '--mode',
        'shared',
      ]),
    ).toMatchObject({
      backend: 'redis',
      workers: 8,
      durationMs: 60_000,
      faults: ['kill', 'pause'],
      seed: 7,
      mode: 'shared',
      ttl: 500,
      wait: 2_000,
      signalCheck: true,
    });
    expect(parseTortureArgs(['--backend=etcd', '--duration=1m', '--faults=none'])).toMatchObject({
      backend: 'etcd',
      durationMs: 60_000,
      faults: [],
      ttl: 2_000,
    });
  });

  it.each([
    [
      ['--backend', 'mongo'],
      /--backend: unknown backend "mongo"; allowed: memory, redis, redlock, etcd, zookeeper, mysql, postgres/,
    ],
    [[], /--backend is required/],
    [
      [...base, '--faults', 'kill,meteor'],
      /--faults: unknown fault "meteor"; allowed: kill, pause, restart, partition/,
    ],
    [
      ['--backend', 'memory', '--duration', 'soon'],
      /--duration: cannot parse "soon" as a duration/,
    ],
    [['--backend', 'memory', '--duration', '0s'], /--duration: must be longer than 0/],
    [
      ['--backend', 'memory', '--duration', '2s'],
      /--duration: got 2000 ms; allowed: at least \d+ ms/,
    ],
    [[...base, '--workers', '1'], /--workers: got "1"; allowed: an integer from 2 to 64/],
    [[...base, '--workers', 'many'], /--workers: got "many"/],
    [[...base, '--mode', 'both'], /--mode: got "both"; allowed: exclusive, shared/],
    [
      ['--backend', 'etcd', '--duration', '30s', '--ttl', '500ms'],
      /--ttl: got 500 ms; allowed for etcd: at least 2000 ms, a multiple of 1000 ms/,
    ],
    [[...base, '--speed', 'fast'], /unknown option --speed/],
    [[...base, '--signal-check', 'maybe'], /--signal-check: got "maybe"; allowed: on, off/],
    [[...base, '--seed'], /--seed needs a value/],
    [[...base, 'extra'], /unexpected argument "extra"/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseTortureArgs(argv as string[])).toThrow(UsageError);
    expect(() => parseTortureArgs(argv as string[])).toThrow(message as RegExp);
  });

  it('reads durations in ms, s and m', () => {
    expect(parseDuration('d', '500ms')).toBe(500);
    expect(parseDuration('d', '1.5s')).toBe(1_500);
    expect(parseDuration('d', '10m')).toBe(600_000);
    expect(parseDuration('d', '250')).toBe(250);
  });

  it('parses workloads and clock rates, defaulting to every workload and rates inside the drift model', () => {
    expect(parseTortureArgs(base)).toMatchObject({
      workloads: ['plain', 'semaphore', 'multi'],
      clockRates: [0.99, 1.05],
      faults: ['kill', 'pause', 'restart', 'partition', 'delay', 'clock'],
    });
    expect(
      parseTortureArgs([...base, '--workload', 'semaphore,multi', '--clock-rate', '0.9..1.1']),
    ).toMatchObject({ workloads: ['semaphore', 'multi'], clockRates: [0.9, 1.1] });
    expect(parseTortureArgs([...base, '--clock-rate', '0.95'])).toMatchObject({
      clockRates: [0.95, 0.95],
    });
    expect(() => parseTortureArgs([...base, '--workload', 'plain,queue'])).toThrow(
      /--workload: unknown workload "queue"; allowed: plain, semaphore, multi/,
    );
    for (const bad of ['1.1..0.9', '0.1', 'fast'])
      expect(() => parseTortureArgs([...base, '--clock-rate', bad])).toThrow(
        new RegExp(`--clock-rate: got "${bad.replace(/\./g, '\\.')}"`),
      );
  });
});
