/** Limits every backend shares; a backend may lower maxKeyLength in its capabilities. */

/** Largest ttl/wait/maxHold accepted (about 24.8 days: the largest delay setTimeout honours). */
export const MAX_DURATION_MS = 2_147_483_647;
/** Longest full key (prefix included) in characters; a backend may lower it. */
export const MAX_KEY_LENGTH = 512;
