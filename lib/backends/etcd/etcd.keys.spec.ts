import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import {
  decodeEtcdLockName,
  encodeEtcdLockName,
  etcdLockPrefix,
  etcdSemaphorePrefix,
  isContenderKey,
  leaseHex,
  prefixRangeEnd,
} from './etcd.keys';

describe('etcd key layout', () => {
  it("prints lease ids beyond 2^53 exactly, in lowercase hex without padding (as Go's %x)", () => {
    expect(leaseHex('8891691347516014341')).toBe('7b65a22b9d1b3f05');
    // 2^53 + 1: a Number would print ...000
    expect(leaseHex('9007199254740993')).toBe('20000000000001');
    expect(leaseHex(255n)).toBe('ff');
  });

  it('encodes only `/` and `%`, injectively: no two full keys share a NAME, and no NAME contains `/`', () => {
    const keys = [
      'a',
      'a/b',
      'a%2Fb',
      'a%252Fb',
      'a%',
      'a%25',
      'lock:order:42',
      'é/..',
      '%2F',
      '/',
    ];
    const names = keys.map(encodeEtcdLockName);
    expect(new Set(names).size).toBe(keys.length);
    for (const n of names) expect(n).not.toContain('/');
    expect(encodeEtcdLockName('lock:order:42')).toBe('lock:order:42');
    expect(encodeEtcdLockName('a/b')).toBe('a%2Fb');
    expect(etcdLockPrefix('a/b', 'locks/')).toBe('locks/a%2Fb/');
  });

  it('rejects an empty name with InvalidLockOptionsError naming the key', () => {
    expect(() => etcdLockPrefix('')).toThrow(InvalidLockOptionsError);
    expect(() => etcdLockPrefix('')).toThrow(expect.objectContaining({ option: 'key' }));
  });

  it('computes the range end of a prefix as etcd does (last byte + 1, dropping trailing 0xff)', () => {
    expect(prefixRangeEnd(Buffer.from('a/')).toString()).toBe('a0');
    expect([...prefixRangeEnd(Buffer.from([0x61, 0xff]))]).toEqual([0x62]);
    expect([...prefixRangeEnd(Buffer.from([0xff]))]).toEqual([0]);
  });

  it('counts only `NAME/<hex>` as a contender, not the keys of a foreign lock named `NAME/b`', () => {
    const prefix = Buffer.from('a/');
    expect(isContenderKey(Buffer.from('a/7b65a22b9d1b3f05'), prefix)).toBe(true);
    expect(isContenderKey(Buffer.from('a/b/7b65a22b9d1b3f05'), prefix)).toBe(false);
    expect(isContenderKey(Buffer.from('a/'), prefix)).toBe(false);
    expect(isContenderKey(Buffer.from('a/7B65'), prefix)).toBe(false);
    expect(isContenderKey(Buffer.from('ab/1'), prefix)).toBe(false);
  });

  it('puts a semaphore in its own range NAME%sem/, which no encoded lock NAME can own', () => {
    expect(etcdSemaphorePrefix('lock:pool', 'p/')).toBe('p/lock:pool%sem/');
    for (const name of ['lock:pool%sem', 'lock:pool/%sem', 'a%', 'a/b%2F'])
      expect(etcdLockPrefix(name).startsWith('lock:pool%sem/')).toBe(false);
    expect(etcdLockPrefix('lock:pool%sem')).toBe('lock:pool%25sem/');
  });

  it('decodes what it encodes, for names with % and / in any order', () => {
    for (const name of ['a', 'a/b', '%2F', '%25/%', 'x%y/z%2F'])
      expect(decodeEtcdLockName(encodeEtcdLockName(name))).toBe(name);
  });
});
