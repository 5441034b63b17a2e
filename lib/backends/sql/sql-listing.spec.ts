import { keyRange, textKeyRange } from './sql-listing';
import { decide } from './sql-lock.rules';

describe('list(prefix) ranges', () => {
  it('bytes: the last byte below 0xFF is incremented; no upper bound when there is none', () => {
    expect(keyRange(Buffer.from('ab'))).toEqual({ from: Buffer.from('ab'), to: Buffer.from('ac') });
    expect(keyRange(Buffer.from([0x61, 0xff, 0xff])).to).toEqual(Buffer.from([0x62]));
    expect(keyRange(Buffer.alloc(0)).to).toBeNull();
    expect(keyRange(Buffer.from([0xff])).to).toBeNull();
  });

  it('text: by code point, skipping the surrogates, dropping trailing U+10FFFF', () => {
    expect(textKeyRange('ab').to).toBe('ac');
    expect(textKeyRange('a\u{10ffff}').to).toBe('b');
    expect(textKeyRange('a\ud7ff').to).toBe('a\ue000');
    expect(textKeyRange('a\u{1f600}').to).toBe('a\u{1f601}');
    expect(textKeyRange('').to).toBeNull();
    // Every key with the prefix sorts (by code point) inside [from, to).
    const { from, to } = textKeyRange('k/\u00e9');
    for (const key of ['k/\u00e9', 'k/\u00e9\u{10ffff}', 'k/\u00e9\u0000z'])
      expect(key >= from && codePoints(key) < codePoints(to!)).toBe(true);
  });
});

describe('semaphore decision (holder rows)', () => {
  const row = (mode: 'exclusive' | 'shared' | 'semaphore', leftUs: number) => ({
    owner: 'x',
    mode,
    leftUs,
  });

  it('counts live permits against the request’s own permits; locks and permits are independent', () => {
    const permits = [row('semaphore', 5_000), row('semaphore', 9_000), row('semaphore', -1)];
    expect(decide(permits, 'exclusive', 3)).toEqual({ blocked: false, expired: 1 });
    expect(decide(permits, 'exclusive', 2)).toEqual({ blocked: true, retryAfter: 5 });
    expect(decide(permits, 'exclusive')).toEqual({ blocked: false, expired: 1 });
    expect(decide([row('exclusive', 5_000)], 'exclusive', 2)).toEqual({
      blocked: false,
      expired: 0,
    });
  });
});

/** Compares as UTF-8 bytes do (code point order), unlike JS's UTF-16 `<`. */
function codePoints(s: string): string {
  return [...s].map((c) => c.codePointAt(0)!.toString(16).padStart(6, '0')).join('');
}
