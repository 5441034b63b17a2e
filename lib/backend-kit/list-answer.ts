/**
 * A backend's list() answers the held keys it found. When its own bound (time, calls) ended the
 * walk before it saw every candidate, held keys may be missing: the answer says so by carrying
 * `partial: true` (a non-enumerable property, so the array still compares and prints as the keys),
 * and LockService.list() passes it on. An answer that stopped at the caller's limit is not partial.
 */
export type ListAnswer = string[] & { readonly partial?: boolean };

/** Marks `keys` as a partial answer and returns it. */
export function markPartial(keys: string[]): ListAnswer {
  return Object.defineProperty(keys, 'partial', { value: true, enumerable: false });
}

/** Whether a list() answer was marked partial. */
export function isPartial(keys: readonly string[]): boolean {
  return (keys as ListAnswer).partial === true;
}
