import 'reflect-metadata';
import { MemoryLockBackend } from '../backends/memory/memory.backend';
import { LockEngine } from '../core/lock-engine';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { Fenced } from './fenced.decorator';
import { FENCED_METADATA, type FencedOptions } from './fenced.interceptor';
import { fencingHeaders, formatFencing, parseFencing, verifyFencing } from './fencing-carrier';
import * as tokens from './fencing-token';
import { MemoryFenceStore } from './memory-fence.store';

/** A holder's handle as the stores read it (two grants that happened to get one token). */
const grantOf = (owner: string, fencingToken: bigint) => ({ key: 'k', fencingToken, owner });

describe('fence grants: a token counts only for the grant it came from', () => {
  it('refuses an equal token from another grant; the holder writes again with its own', async () => {
    const store = new MemoryFenceStore();
    const old = grantOf('owner-of-the-old-grant', 7n);
    const next = grantOf('owner-of-the-new-grant', 7n);
    expect(store.write('acct', next as never, () => 'new').accepted).toBe(true);
    expect(store.write('acct', next as never, () => 'new again').accepted).toBe(true);
    const late = store.write('acct', old as never, () => 'stale');
    expect(late).toMatchObject({ accepted: false, token: 7n, highest: 7n });
    expect(!late.accepted && late.error.message).toMatch(/already written by another grant/);
    // A higher token from any grant is current.
    expect((await store.advance('acct', grantOf('third', 8n) as never)).accepted).toBe(true);
  });

  it('a multi-key handle is refused unless the key is named; the named key gives its own token', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    try {
      const first = await engine.acquire('b'); // b's counter moves ahead of a's
      await first.release();
      const both = await engine.acquire(['a', 'b']);
      const tokenOfB = both.fencingTokens.get('b') as bigint;
      expect(tokenOfB).not.toBe(both.fencingToken);
      const store = new MemoryFenceStore();
      expect(() => store.write('balance:b', both, () => 'x')).toThrow(InvalidLockOptionsError);
      expect(() => fencingHeaders(both)).toThrow(/fencingGrant\(handle, key\)/);
      const grantOfB = tokens.fencingGrant(both, 'b');
      expect(grantOfB).toMatchObject({ key: 'b', token: tokenOfB });
      expect(store.write('balance:b', grantOfB, () => 'x').accepted).toBe(true);
      expect(store.highest('balance:b')).toBe(tokenOfB);
      expect(parseFencing(fencingHeaders(grantOfB)['x-fencing-token'])).toEqual({
        key: 'b',
        token: tokenOfB,
        grant: grantOfB.grant,
      });
      expect(() => tokens.fencingGrant(both, 'c')).toThrow(/one of the handle's keys \(a, b\)/);
      await both.release();
    } finally {
      await engine.close();
    }
  });

  it('refuses tokens above 2^63-1 everywhere (they would wrap in a BIGINT)', async () => {
    const top = 2n ** 63n - 1n;
    expect(tokens.toFencingToken(top)).toBe(top);
    for (const bad of [top + 1n, '9223372036854775808', '18446744073709551615'])
      expect(() => tokens.toFencingToken(bad)).toThrow(InvalidLockOptionsError);
    expect(parseFencing('9223372036854775808; key=k')).toBeUndefined();
    expect(parseFencing(`${top}; key=k`)).toMatchObject({ token: top });
    await expect(new MemoryFenceStore().advance('r', top + 1n)).rejects.toThrow(
      InvalidLockOptionsError,
    );
  });

  it('the carrier sends the grant id, never the owner token that releases the lock', () => {
    const value = formatFencing({ key: 'k', fencingToken: 5n, owner: 'secret-owner' } as never);
    expect(value).not.toContain('secret-owner');
    expect(parseFencing(value)).toEqual({ key: 'k', token: 5n, grant: expect.any(String) });
    expect(parseFencing(value)?.grant).toHaveLength(32);
    expect(parseFencing('5; key=k')).toEqual({ key: 'k', token: 5n, grant: '' });
  });

  it('MemoryFenceStore keeps at most maxResources records, and reset() forgets one', async () => {
    const store = new MemoryFenceStore({ maxResources: 3 });
    for (let i = 0; i < 10; i++) await store.advance(`key:${i}`, 1n);
    expect([0, 6, 7, 8, 9].map((i) => store.highest(`key:${i}`))).toEqual([
      undefined,
      undefined,
      1n,
      1n,
      1n,
    ]);
    await store.advance('victim', 2n ** 63n - 1n); // a forged token shuts the holders out
    expect((await store.advance('victim', 5n)).accepted).toBe(false);
    expect(await store.reset('victim')).toBe(true);
    expect((await store.advance('victim', 5n)).accepted).toBe(true);
    expect(() => new MemoryFenceStore({ maxResources: 0 })).toThrow(/maxResources/);
  });

  it('@Fenced({ keys: /g regex }) answers the same for the same key on every call', () => {
    class Handlers {
      @Fenced({ keys: /^account:/g })
      write(): void {}
    }
    const options = Reflect.getMetadata(FENCED_METADATA, Handlers.prototype.write) as FencedOptions;
    const keys = options.keys as RegExp;
    expect([1, 2, 3].map(() => keys.test('account:1'))).toEqual([true, true, true]);
  });

  it('a grant signed with a secret verifies only with that secret, and only unchanged', () => {
    const secret = 'a-secret-of-32-characters-or-so!';
    const lock = { key: 'account:1', fencingToken: 12n, owner: 'owner-1' };
    const signed = parseFencing(formatFencing(lock, { secret })) as never;
    expect(verifyFencing(signed, secret)).toBe(true);
    expect(verifyFencing(signed, ['an-old-secret-being-rotated', secret])).toBe(true);
    expect(verifyFencing(signed, 'another-secret-of-enough-length')).toBe(false);
    const forged = { ...(signed as object), token: 2n ** 63n - 1n } as never;
    expect(verifyFencing(forged, secret)).toBe(false);
    expect(verifyFencing(parseFencing(formatFencing(lock)) as never, secret)).toBe(false);
    expect(() => formatFencing(lock, { secret: 'short' })).toThrow(/secret/);
  });
});
