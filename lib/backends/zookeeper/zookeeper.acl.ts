import { createHash } from 'node:crypto';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/**
 * ZooKeeper ACLs and authentication for lock nodes. By default nodes are created open
 * (world:anyone, all permissions), as Curator does: any client of the ensemble can then delete
 * another's lock node, i.e. break its lock. To lock it down, give the backend `authInfo` (added to
 * every session with addAuthInfo, also after reconnects) and an `acl` that grants the
 * authenticated identity what it needs. ZooKeeper checks DELETE and CREATE on the *parent*, so
 * the ACL matters most on the lock directories the backend creates.
 */
export interface ZooKeeperAcl {
  /** 'digest', 'world', 'ip', 'auth', 'sasl', 'x509', ... */
  readonly scheme: string;
  /** For digest: `user:base64(sha1(user:password))` (see zooKeeperDigestId); world: 'anyone'. */
  readonly id: string;
  /** Bit mask (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16, ALL 31) or letters of 'rwcda'. */
  readonly perms: number | string;
}

export interface ZooKeeperAuthInfo {
  /** Usually 'digest'. */
  readonly scheme: string;
  /** For digest: 'user:password' (sent to the server, which hashes it). */
  readonly auth: string | Buffer;
}

const PERM_BITS: Record<string, number> = { r: 1, w: 2, c: 4, d: 8, a: 16 };

/** The digest id ZooKeeper derives from `user:password`: what a digest ACL names. */
export function zooKeeperDigestId(user: string, password: string): string {
  const hash = createHash('sha1').update(`${user}:${password}`).digest('base64');
  return `${user}:${hash}`;
}

/** Validates the `acl` option; returns the permission masks resolved. */
export function checkAcl(value: unknown): readonly ZooKeeperAcl[] | undefined {
  if (value === undefined) return undefined;
  const allowed = 'a non-empty array of { scheme, id, perms } (perms: 1-31 or letters of "rwcda")';
  if (!Array.isArray(value) || value.length === 0)
    throw new InvalidLockOptionsError('acl', value, allowed);
  return value.map((entry: unknown, i) => {
    const e = entry as Partial<ZooKeeperAcl> | null;
    if (
      e === null ||
      typeof e !== 'object' ||
      typeof e.scheme !== 'string' ||
      e.scheme === '' ||
      typeof e.id !== 'string'
    ) {
      throw new InvalidLockOptionsError(`acl[${i}]`, entry, allowed);
    }
    const perms = permissionMask(e.perms);
    if (perms === undefined)
      throw new InvalidLockOptionsError(`acl[${i}].perms`, e.perms, '1-31 or letters of "rwcda"');
    return { scheme: e.scheme, id: e.id, perms };
  });
}

/** Validates the `authInfo` option (one entry or a list). */
export function checkAuthInfo(value: unknown): readonly ZooKeeperAuthInfo[] {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  const allowed =
    "{ scheme, auth } (e.g. { scheme: 'digest', auth: 'user:password' }) or a list of them";
  if (list.length === 0) throw new InvalidLockOptionsError('authInfo', value, allowed);
  for (const entry of list) {
    const e = entry as Partial<ZooKeeperAuthInfo> | null;
    const ok =
      e !== null &&
      typeof e === 'object' &&
      typeof e.scheme === 'string' &&
      e.scheme !== '' &&
      ((typeof e.auth === 'string' && e.auth !== '') || Buffer.isBuffer(e.auth));
    // The value is a secret: the error never repeats it.
    if (!ok) throw new InvalidLockOptionsError('authInfo', '(hidden)', allowed);
  }
  return list as ZooKeeperAuthInfo[];
}

function permissionMask(perms: unknown): number | undefined {
  if (typeof perms === 'number')
    return Number.isInteger(perms) && perms >= 1 && perms <= 31 ? perms : undefined;
  if (typeof perms !== 'string' || perms === '') return undefined;
  let mask = 0;
  for (const ch of perms.toLowerCase()) {
    if (!(ch in PERM_BITS)) return undefined;
    mask |= PERM_BITS[ch];
  }
  return mask;
}

/**
 * The ACL list in the form node-zookeeper-client's create/mkdirp serialize: objects with
 * `toRecord()` returning a jute record (`byteLength()`, `serialize(buffer, offset)`). The wire
 * form is ZooKeeper's ACL record: int perms, then the Id (ustring scheme, ustring id), each
 * ustring an int32 byte length and UTF-8 bytes. Written here so the package never loads the driver.
 */
export function driverAcl(acl: readonly ZooKeeperAcl[]): unknown[] {
  return acl.map((entry) => {
    const scheme = Buffer.from(entry.scheme, 'utf8');
    const id = Buffer.from(entry.id, 'utf8');
    const record = {
      byteLength: () => 4 + 4 + scheme.length + 4 + id.length,
      serialize: (buffer: Buffer, offset: number) => {
        let at = offset;
        at = buffer.writeInt32BE(entry.perms as number, at);
        at = buffer.writeInt32BE(scheme.length, at);
        at += scheme.copy(buffer, at);
        at = buffer.writeInt32BE(id.length, at);
        at += id.copy(buffer, at);
        return at - offset;
      },
    };
    return { toRecord: () => record };
  });
}
