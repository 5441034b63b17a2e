/**
 * Redis Cluster's key -> slot rule, exactly as cluster.c's keyHashSlot has it: CRC16 (XMODEM) of
 * the key's bytes mod 16384, where the bytes are the hash tag's when the key has one. A hash tag
 * is what lies between the first `{` and the first `}` after it, when that is non-empty; `{}` (or
 * no `}` after the first `{`) means the whole key is hashed. Keys are UTF-8, as ioredis sends them.
 * The Redis fenced store uses it (a fence record in its resource's slot).
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
