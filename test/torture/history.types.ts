/**
 * What workers and the fenced store record. Times are ms on the machine's clock with sub-ms
 * resolution (performance.timeOrigin + performance.now()), comparable across the harness's
 * processes because they all run on one host.
 */
export type Role = 'writer' | 'reader';
export type Via = 'withLock' | 'acquire' | 'locked';

export type HistoryEvent =
  | { ev: 'ready'; t: number; slot: number; inc: number; role: Role; via: Via; pid: number }
  | { ev: 'invoke'; t: number; op: string; mode: 'exclusive' | 'shared' }
  | { ev: 'ok'; t: number; op: string; token: string; mode: 'exclusive' | 'shared' }
  | { ev: 'fail'; t: number; op: string; error: string; message: string }
  | { ev: 'lost'; t: number; op: string; reason: string }
  | { ev: 'read'; t: number; op: string; accepted: boolean; value: number }
  | { ev: 'write-invoke'; t: number; op: string; value: number }
  | { ev: 'write'; t: number; op: string; accepted: boolean }
  | { ev: 'skip-write'; t: number; op: string }
  | { ev: 'rend'; t: number; op: string; accepted: boolean }
  | { ev: 'store-error'; t: number; op: string; message: string }
  | { ev: 'release'; t: number; op: string }
  | { ev: 'stop'; t: number };

export type StoreOp = 'read' | 'write' | 'rbegin' | 'rend';

/** One operation as the fenced store saw it, in the store's own order (seq). */
export interface StoreRecord {
  seq: number;
  t: number;
  op: StoreOp;
  /** Worker op id `<slot>.<incarnation>.<n>`: one lock grant's critical section. */
  attempt: string;
  token: string;
  accepted: boolean;
  /** read/rbegin: the value returned; write: the value written (or refused). */
  value: number;
}

/** A fault the nemesis injected, for the report's timeline. */
export interface NemesisEvent {
  t: number;
  fault: 'kill' | 'pause' | 'restart' | 'partition';
  target: string;
  phase: 'start' | 'end';
  detail?: string;
}

export function now(): number {
  return performance.timeOrigin + performance.now();
}
