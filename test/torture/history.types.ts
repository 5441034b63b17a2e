/**
 * What workers and the fenced store record. Times are ms on the machine's wall clock with sub-ms
 * resolution (see `now`), comparable across the harness's processes because they all run on one
 * host.
 */
export type Role = 'writer' | 'reader';
export type Via = 'withLock' | 'acquire' | 'locked';
/** What one grant was: a plain lock on one key, a semaphore (permits N), several keys at once. */
export type Workload = 'plain' | 'semaphore' | 'multi';
export const WORKLOADS: readonly Workload[] = ['plain', 'semaphore', 'multi'];
/** The store key of the plain single-key lock (and the only key of histories without keys). */
export const DEFAULT_KEY = 'counter';

export type HistoryEvent =
  | { ev: 'ready'; t: number; slot: number; inc: number; role: Role; via: Via; pid: number }
  | {
      ev: 'invoke';
      t: number;
      op: string;
      mode: 'exclusive' | 'shared';
      /** Absent: a plain lock on DEFAULT_KEY. */
      workload?: Workload;
      /** The keys asked for, in the order the worker passed them (multi: random order). */
      keys?: string[];
      /** Semaphore grants: the permits every holder of that key uses. */
      permits?: number;
    }
  | {
      ev: 'ok';
      t: number;
      op: string;
      /** The handle's fencingToken (multi-key: the first key's in canonical order). */
      token: string;
      mode: 'exclusive' | 'shared';
      /** Every key's token (multi-key grants; otherwise the one key's, or absent for DEFAULT_KEY). */
      tokens?: Record<string, string>;
    }
  | { ev: 'fail'; t: number; op: string; error: string; message: string }
  | { ev: 'lost'; t: number; op: string; reason: string }
  | { ev: 'read'; t: number; op: string; accepted: boolean; value: number }
  | { ev: 'write-invoke'; t: number; op: string; value: number }
  | { ev: 'write'; t: number; op: string; accepted: boolean }
  | { ev: 'skip-write'; t: number; op: string }
  /** Semaphore holders: the signal had not aborted here, right before the section's end at the store. */
  | { ev: 'valid'; t: number; op: string }
  | { ev: 'rend'; t: number; op: string; accepted: boolean }
  | { ev: 'store-error'; t: number; op: string; message: string }
  | { ev: 'release'; t: number; op: string }
  | { ev: 'stop'; t: number };

/** read/write: fenced counter access; rbegin/rend: a reader's section; sbegin/send: a semaphore permit's section. */
export type StoreOp = 'read' | 'write' | 'rbegin' | 'rend' | 'sbegin' | 'send';

/** One operation as the fenced store saw it, in the store's own order (seq). */
export interface StoreRecord {
  seq: number;
  t: number;
  op: StoreOp;
  /** Worker op id `<slot>.<incarnation>.<n>`: one lock grant's critical section. */
  attempt: string;
  /** The resource (one counter per lock key, one permit table per semaphore key); absent = DEFAULT_KEY. */
  key?: string;
  token: string;
  accepted: boolean;
  /** read/rbegin: the value returned; write: the value written (or refused). */
  value: number;
}

/** A fault the nemesis injected, for the report's timeline. */
export interface NemesisEvent {
  t: number;
  fault: 'kill' | 'pause' | 'restart' | 'partition' | 'delay' | 'clock';
  target: string;
  phase: 'start' | 'end';
  detail?: string;
}

/**
 * The real clock, captured when this module loads: a worker under the clock nemesis replaces
 * performance.now and Date.now for the library, but its history stays on the machine's clock.
 */
const realPerformanceNow = performance.now.bind(performance);

/**
 * Wall-clock ms at performance.now() 0, measured here rather than read from
 * performance.timeOrigin: Node takes that from two clock reads at process start, and a process
 * started on a loaded machine can be descheduled between them (a CI run saw one worker's whole
 * history 19.8 ms ahead of the store's, which the checker took for a holder over permits and tokens
 * going backwards). At the instant Date.now() ticks to a new ms, the wall clock is that ms to
 * within the tick's detection; of three such edges the largest offset wins (a preemption between
 * the two reads only makes an estimate smaller).
 */
function wallClockOffset(): number {
  let best = -Infinity;
  for (let edge = 0; edge < 3; edge++) {
    const from = Date.now();
    let ms = from;
    let at = realPerformanceNow();
    while (ms === from) {
      ms = Date.now();
      at = realPerformanceNow();
    }
    best = Math.max(best, ms - at);
  }
  return best;
}
const offset = wallClockOffset();

export function now(): number {
  return offset + realPerformanceNow();
}
