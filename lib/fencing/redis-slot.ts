import { hashTag, keySlot } from '../backend-kit/cluster-slot';

export { CLUSTER_SLOTS, crc16, hashTag, keySlot } from '../backend-kit/cluster-slot';

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
