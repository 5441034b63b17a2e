import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import {
  checkBasePath,
  encodeLockName,
  lockDirectory,
  MAX_NODE_NAME_LENGTH,
  nodePrefix,
  protectedId,
  sequenceOf,
  sortChildren,
  decodeLockName,
  isReader,
  standing,
} from './zookeeper.nodes';

describe('encodeLockName', () => {
  it('keeps [A-Za-z0-9_:.-] as is, so Curator users can name the same path', () => {
    expect(encodeLockName('lock:order:42')).toBe('lock:order:42');
    expect(encodeLockName('lock:orders.v2_x-y')).toBe('lock:orders.v2_x-y');
  });

  it('encodes /, %, NUL, control characters, spaces and non-ASCII as %XX of UTF-8, so a key stays one node name', () => {
    expect(encodeLockName('a/b')).toBe('a%2Fb');
    expect(encodeLockName('../../zookeeper')).toBe('..%2F..%2Fzookeeper');
    expect(encodeLockName('x\u0000y\nz')).toBe('x%00y%0Az');
    expect(encodeLockName('100%')).toBe('100%25');
    expect(encodeLockName('é ')).toBe('%C3%A9%20');
  });

  it('encodes names made only of dots, which ZooKeeper reads as relative paths', () => {
    expect(encodeLockName('.')).toBe('%2E');
    expect(encodeLockName('..')).toBe('%2E%2E');
    expect(encodeLockName('...')).toBe('%2E%2E%2E');
    expect(encodeLockName('a..')).toBe('a..');
  });

  it('is injective over tricky keys (no two keys share a node name)', () => {
    const keys = [
      'a/b',
      'a%2Fb',
      'a%252Fb',
      '.',
      '%2E',
      '..',
      '%2E%2E',
      'a b',
      'a%20b',
      'a\u0000',
      'a%00',
      'é',
      '%C3%A9',
      'a{b}',
      'a*',
      '',
    ].filter(Boolean);
    const names = keys.map(encodeLockName);
    expect(new Set(names).size).toBe(keys.length);
    for (const name of names) expect(name).not.toMatch(/[/\u0000-\u001f]|^\.{1,2}$/);
  });

  it('rejects an empty name and a name past the node-name limit, naming the option', () => {
    expect(() => encodeLockName('')).toThrow(InvalidLockOptionsError);
    const long = '€'.repeat(200); // 3 UTF-8 bytes each: 1800 characters encoded
    expect(() => encodeLockName(long)).toThrow(
      new RegExp(`at most ${MAX_NODE_NAME_LENGTH} characters`),
    );
    expect(() => encodeLockName(long)).toThrow(expect.objectContaining({ option: 'key' }));
  });
});

describe('checkBasePath / lockDirectory', () => {
  it('accepts absolute paths and builds <basePath>/<encoded key>', () => {
    expect(checkBasePath('/locks')).toBe('/locks');
    expect(lockDirectory('/app/locks', 'lock:a/b')).toBe('/app/locks/lock:a%2Fb');
  });

  it.each([
    ['locks'],
    ['/locks/'],
    ['/'],
    ['/a//b'],
    ['/a/../b'],
    ['/a/./b'],
    ['/zookeeper'],
    ['/zookeeper/quota'],
    ['/a\u0001'],
    // Characters the server refuses in a path: they failed as backend-unavailable on every acquire.
    ['/locks\ue000'],
    ['/locks\ufff0'],
    ['/a\u0085'],
    ['/a\ud83d\ude00'],
    [''],
    [42],
    [null],
  ])('rejects basePath %p with InvalidLockOptionsError naming basePath', (bad) => {
    expect(() => checkBasePath(bad)).toThrow(
      expect.objectContaining({ name: 'InvalidLockOptionsError', option: 'basePath' }),
    );
  });
});

describe('node names and ordering (Curator compatible)', () => {
  it('lays the owner token out as a UUID behind the protected prefix', () => {
    const id = protectedId('0123456789abcdef0123456789abcdef');
    expect(id).toBe('01234567-89ab-cdef-0123-456789abcdef');
    expect(nodePrefix(id, 'lock-')).toBe('_c_01234567-89ab-cdef-0123-456789abcdef-lock-');
  });

  it('sorts by the sequence after the last lock name, whatever the uuid', () => {
    const kids = [
      '_c_ffffffff-0000-0000-0000-000000000000-lock-0000000003',
      '_c_00000000-0000-0000-0000-000000000000-lock-0000000010',
      '_c_aaaaaaaa-0000-0000-0000-000000000000-lock-0000000001',
    ];
    expect(sortChildren(kids).map(sequenceOf)).toEqual(['0000000001', '0000000003', '0000000010']);
    expect(sequenceOf('_c_x-__READ__0000000007')).toBe('0000000007');
    expect(sequenceOf('_c_x-__WRIT__0000000008')).toBe('0000000008');
  });

  it('exclusive: held at index 0, else watches exactly its predecessor', () => {
    const kids = ['_c_a-__READ__0000000001', '_c_b-lock-0000000002', '_c_c-__WRIT__0000000003'];
    expect(standing(kids, kids[0], true)).toEqual({ held: true });
    expect(standing(kids, kids[2], true)).toEqual({ held: false, watch: kids[1] });
    expect(standing(kids, '_c_z-lock-0000000009', true)).toEqual({ held: false, missing: true });
  });

  it('shared: held when no writer sorts before it, else watches the earliest writer', () => {
    const kids = [
      '_c_a-__READ__0000000001',
      '_c_b-__READ__0000000002',
      '_c_c-__WRIT__0000000003',
      '_c_d-__READ__0000000004',
      '_c_e-lock-0000000005',
      '_c_f-__READ__0000000006',
    ];
    expect(standing(kids, kids[1], false)).toEqual({ held: true });
    expect(standing(kids, kids[3], false)).toEqual({ held: false, watch: kids[2] });
    expect(standing(kids, kids[5], false)).toEqual({ held: false, watch: kids[2] });
  });

  it("orders kazoo's, Curator LeaderLatch's and our nodes by the server's sequence alone", () => {
    const kids = [
      '_c_aaaaaaaa-0000-0000-0000-000000000000-lock-0000000004',
      '0123456789abcdef0123456789abcdef__lock__0000000002',
      '_c_bbbbbbbb-0000-0000-0000-000000000000-latch-0000000003',
      'fedcba9876543210fedcba9876543210__rlock__0000000001',
      '_c_cccccccc-0000-0000-0000-000000000000-__lock__0000000005',
    ];
    expect(sortChildren(kids).map(sequenceOf)).toEqual([
      '0000000001',
      '0000000002',
      '0000000003',
      '0000000004',
      '0000000005',
    ]);
    // Without the kazoo/latch names these sorted by their whole name, after every Curator node.
    expect(sortChildren(kids)[0]).toBe(kids[3]);
    expect(isReader(kids[3])).toBe(true);
    expect(isReader(kids[1])).toBe(false);
    // kazoo's reader before a kazoo writer: a kazoo reader is shared with ours.
    expect(standing(sortChildren(kids), kids[3], false)).toEqual({ held: true });
    expect(standing(sortChildren(kids), kids[0], true)).toEqual({ held: false, watch: kids[2] });
  });

  it('decodes exactly the directory names encodeLockName makes', () => {
    for (const key of ['a', 'election:fleet', 'a/b c', '%', '..', '.x', 'é✓𝄞', 'x%2Fy'])
      expect(decodeLockName(encodeLockName(key))).toBe(key);
    expect(decodeLockName('%zz')).toBeUndefined();
    expect(decodeLockName('%2f')).toBeUndefined(); // lower-case hex is never ours
    expect(decodeLockName('..')).toBeUndefined();
    expect(decodeLockName('%FF')).toBeUndefined(); // not UTF-8
  });
});
