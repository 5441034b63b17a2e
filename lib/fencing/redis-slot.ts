/**
 * Redis Cluster's key -> slot rule, exactly as cluster.c's keyHashSlot has it: CRC16 (XMODEM) of
 * the key's bytes mod 16384, where the bytes are the hash tag's when the key has one. A hash tag
 * is what lies between the first `{` and the first `}` after it, when that is non-empty; `{}` (or
 * no `}` after the first `{`) means the whole key is hashed. Keys are UTF-8, as ioredis sends them.
 */
export const CLUSTER_SLOTS = 16384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/** CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum Redis Cluster uses. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = ((crc << 8) ^ CRC16_TABLE[((crc >> 8) ^ b) & 0xff]) & 0xffff;
  return crc;
}

/** The key's hash tag, or undefined when the whole key is hashed. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** The cluster slot of `key` (what CLUSTER KEYSLOT answers). */
export function keySlot(key: string): number {
  return crc16(Buffer.from(hashTag(key) ?? key, 'utf8')) % CLUSTER_SLOTS;
}

/**
 * A short tag (base-36 digits) per slot, found once and cached: for keys that cannot be wrapped.
 */
const slotTags = new Map<number, string>();

function tagForSlot(slot: number): string {
  let tag = slotTags.get(slot);
  for (let n = 0; tag === undefined; n++) {
    const candidate = n.toString(36);
    if (keySlot(candidate) === slot) slotTags.set(slot, (tag = candidate));
  }
  return tag;
}

/**
 * The key of `resource`'s fence record: in the resource's own slot (so one script may touch both
 * on Cluster), distinct for distinct resources, and never a key the resource's own name could be.
 * - resource with a hash tag `{t}`: `<prefix>{t}:<resource>`;
 * - no tag and no `}`: `<prefix>{<resource>}` (the tag is the whole resource name);
 * - no tag but a `}` (cannot be wrapped): `<prefix>{<a short tag of the same slot>}:<resource>`.
 * The three shapes cannot collide: the first `}` ends the tag in each, and only the second shape
 * has exactly one `}`. `prefix` holds no braces (checked by the store).
 */
export function fenceKeyFor(resource: string, prefix: string): string {
  const tag = hashTag(resource);
  if (tag !== undefined) return `${prefix}{${tag}}:${resource}`;
  if (!resource.includes('}')) return `${prefix}{${resource}}`;
  return `${prefix}{${tagForSlot(keySlot(resource))}}:${resource}`;
}
