import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';

/**
 * Contention through a failover, shared by the Cluster and Sentinel failover specs: contender
 * processes (contender-processes.ts) loop on one key with 1 s holds (ttl 30 s) while a test kills
 * or pauses its primary or migrates its slot; `check` asserts the verdicts and reports the row of
 * the docs' table.
 */
/** Promotion takes 3-7 s in these specs; the bound leaves room for a slow CI machine. */
export const RECOVERY_BOUND_MS = 10_000;
export const WAIT_MS = 20_000;
/** The contenders' engine operation budget (a call may end this much after its wait). */
export const CONTENDER_OPERATION_TIMEOUT_MS = 2_000;

/** Epoch ms with sub-ms precision: comparable across the contender processes (one clock). */
export const now = () => performance.timeOrigin + performance.now();

/** Polls `done` every 50 ms until it holds or `ms` have passed since `from` (epoch ms). */
export async function until(done: () => boolean, from: number, ms: number): Promise<void> {
  while (!done() && now() - from < ms) await new Promise((r) => setTimeout(r, 50));
}

export interface Contention {
  grants: { at: number; token: bigint }[];
  errors: { name: string; ms: number }[];
  overlaps: number;
  counter: number;
  sections: number;
}

/** The contention's verdicts, and its table row. */
export function check(
  report: (line: string) => void,
  name: string,
  c: Contention,
  faultAt: number,
  bound = RECOVERY_BOUND_MS,
) {
  const after = c.grants.find((g) => g.at > faultAt);
  const recovery = after ? after.at - faultAt : Infinity;
  const ordered = c.grants.every((g, i) => i === 0 || g.token > c.grants[i - 1].token);
  const typed = [
    LockAcquireTimeoutError.name,
    LockBackendUnavailableError.name,
    LockLostError.name,
  ];
  report(
    `${name}: first grant ${recovery.toFixed(0)} ms after the fault; ${c.grants.length} grants, ` +
      `${c.errors.length} errors (${[...new Set(c.errors.map((e) => e.name))].join(', ') || 'none'}), ` +
      `longest failed call ${Math.max(0, ...c.errors.map((e) => e.ms)).toFixed(0)} ms; ` +
      `${c.overlaps} overlaps; counter ${c.counter}/${c.sections}; tokens ${ordered ? 'strictly growing' : 'OUT OF ORDER'}`,
  );
  expect(recovery).toBeLessThan(bound);
  expect(c.overlaps).toBe(0);
  expect(c.counter).toBe(c.sections);
  expect(ordered).toBe(true);
  for (const e of c.errors) {
    expect(typed).toContain(e.name);
    // Within the wait, plus the engine's operation budget and a second of slack for the call.
    expect(e.ms).toBeLessThan(WAIT_MS + CONTENDER_OPERATION_TIMEOUT_MS + 1_000);
  }
}
