/**
 * Redis Cluster's key -> slot rule (cluster.c keyHashSlot): CRC16 (XMODEM) of the hash tag's bytes
 * (what lies between the first `{` and the next `}`, when non-empty), else of the whole key, mod
 * 16384. What `replicas` needs on Cluster: WAIT must run on the connection to the primary that
 * took the write, the one that owns the key's slot.
 */
const SLOTS = 16384;

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/** The cluster slot of `key` (what CLUSTER KEYSLOT answers). */
export function clusterSlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const b of Buffer.from(hashed, 'utf8'))
    crc = ((crc << 8) ^ TABLE[((crc >> 8) ^ b) & 0xff]) & 0xffff;
  return crc % SLOTS;
}
