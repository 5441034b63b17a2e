/**
 * The key range `list(prefix)` scans, as byte strings in the index's (binary) order: every key that
 * starts with `prefix` lies in [from, to). `to` is the prefix with its trailing 0xFF bytes dropped
 * and its last byte incremented; undefined (no upper bound) when the prefix is empty or all 0xFF.
 * UTF-8 preserves code-point order byte-wise, so the same range bounds a PostgreSQL text column
 * compared COLLATE "C".
 */
export function keyRange(prefix: Buffer): { from: Buffer; to: Buffer | null } {
  let end = prefix.length;
  while (end > 0 && prefix[end - 1] === 0xff) end--;
  if (end === 0) return { from: prefix, to: null };
  const to = Buffer.from(prefix.subarray(0, end));
  to[end - 1]++;
  return { from: prefix, to };
}

/**
 * The same range over code points, for a text parameter (PostgreSQL): the successor must itself be
 * valid text, so the last code point below U+10FFFF is incremented (skipping the surrogates).
 */
export function textKeyRange(prefix: string): { from: string; to: string | null } {
  const points = [...prefix].map((c) => c.codePointAt(0)!);
  while (points.length > 0 && points[points.length - 1] === 0x10ffff) points.pop();
  if (points.length === 0) return { from: prefix, to: null };
  const last = points[points.length - 1] + 1;
  points[points.length - 1] = last === 0xd800 ? 0xe000 : last;
  return { from: prefix, to: String.fromCodePoint(...points) };
}
