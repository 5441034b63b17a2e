import { InvalidLockOptionsError, LockEngine, MemoryLockBackend } from '../../lib';

/**
 * A bad campaign fails silently, forever: a name or options that acquire would refuse made
 * campaign() return normally while whenLeader() never resolved and each round's error went to
 * debug. campaign validates like acquire and throws at once; an error a backend raises that no
 * later round can cure stops the campaign with a warning and rejects whenLeader(); after
 * resign(), campaigning for the same name campaigns again.
 */
describe('campaign validation', () => {
  const engine = new LockEngine({ backend: new MemoryLockBackend(), defaults: { ttl: 1_000 } });
  afterAll(() => engine.close());

  const bad: [string, unknown, unknown][] = [
    ['a NUL in the name', 'a\0b', undefined],
    ['a 600-character name', 'n'.repeat(600), undefined],
    ['an empty name', '', undefined],
    ['a name that is not a string', 42, undefined],
    ['a negative ttl', 'ok', { ttl: -1 }],
    ['an unknown backend', 'ok', { backend: 'nope' }],
    ['an unknown option name', 'ok', { tll: 1_000 }],
    ['a proposal that is not a string', 'ok', { proposal: 7 }],
    ['an empty proposal', 'ok', { proposal: '' }],
    ['options that are not an object', 'ok', 'fast'],
  ];

  it.each(bad)('a bad campaign is rejected at once: %s', (_, name, options) => {
    expect(() => engine.leadership(name as string, options as never)).toThrow(
      InvalidLockOptionsError,
    );
  });

  it('a campaign the backend refuses stops with a warning and rejects whenLeader()', async () => {
    const refusing = new MemoryLockBackend();
    const refuse = (): never => {
      throw new InvalidLockOptionsError('key', 'election:x', 'what this backend accepts');
    };
    // Every way in refuses the request itself, as a backend's own key rules would.
    Object.assign(refusing, {
      tryAcquire: () => Promise.resolve().then(refuse),
      acquire: () => Promise.resolve().then(refuse),
    });
    const e = new LockEngine({ backend: refusing, defaults: { ttl: 1_000 } });
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const l = e.leadership('x');
      await expect(l.whenLeader()).rejects.toBeInstanceOf(InvalidLockOptionsError);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0][0]).toMatch(/campaign for "x" stopped/);
      expect(warn.mock.calls[0][1]).toBe('DistributedLockWarning');
      expect(l.active).toBe(false);
    } finally {
      warn.mockRestore();
      await e.close();
    }
  });

  it('after resign(), campaign(sameName) campaigns again', async () => {
    const first = engine.leadership('again');
    const t1 = await first.whenLeader();
    await first.resign();
    const second = engine.leadership('again');
    expect(second).not.toBe(first);
    const t2 = await second.whenLeader();
    expect(second.isLeader).toBe(true);
    expect(t2.fencingToken > t1.fencingToken).toBe(true);
    await second.resign();
  });
});
