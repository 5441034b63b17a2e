/**
 * Grant validity. Every backend and the engine count a grant as valid for its ttl minus a clock
 * drift allowance (the Redlock paper's 1 % + 2 ms), dated from when the granting request was SENT,
 * on the monotonic clock: a holder can then never believe it holds a lock longer than the server
 * keeps it, even when its clock runs up to 1 % fast.
 */
export const DRIFT_FACTOR = 0.01;
export const DRIFT_MARGIN_MS = 2;

/** The drift allowance for a ttl. */
export function driftFor(ttl: number, factor = DRIFT_FACTOR, margin = DRIFT_MARGIN_MS): number {
  return Math.ceil(ttl * factor) + margin;
}

/** The part of a ttl we count on: ttl minus the drift allowance. */
export function safeValidity(ttl: number, factor = DRIFT_FACTOR, margin = DRIFT_MARGIN_MS): number {
  return ttl - driftFor(ttl, factor, margin);
}

/** The smallest ttl that leaves some validity after the drift allowance. */
export function minimumTtl(factor = DRIFT_FACTOR, margin = DRIFT_MARGIN_MS): number {
  let ttl = Math.max(1, Math.floor((margin + 1) / (1 - factor)));
  while (safeValidity(ttl, factor, margin) <= 0) ttl++;
  return ttl;
}
