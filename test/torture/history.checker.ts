import type { HistoryEvent, StoreRecord } from './history.types';

/**
 * Reads every worker history and the fenced store's log and judges the run. Safety: no lost update
 * at the fenced resource, no two exclusive critical sections (or a reader and a writer) overlapping
 * as the resource saw them, no token that went backwards in real time, no write attempted after the
 * writer's own signal aborted. Liveness: after the nemesis healed everything, every worker got the
 * lock within 2 x ttl + wait, and the resource accepted writes again. Also what an unfenced
 * resource would have lost, from the store's shadow counter.
 */
export interface CheckInput {
  histories: HistoryEvent[][];
  records: StoreRecord[];
  /** Final values of the fenced counter and of the unfenced shadow counter. */
  value: number;
  shadow: number;
  /** When the nemesis had healed every fault (ms, same clock as the histories). */
  healAt: number;
  ttl: number;
  wait: number;
  /** Slots (worker positions) that ran; each may have had several incarnations. */
  slots: number;
  /** The backend's fencing capability: token order is a violation only under 'strict'. */
  fencing: 'strict' | 'best-effort';
  /** Workers checked their signal before writing; when false, writes after loss are expected (reported only). */
  signalCheck?: boolean;
  /** Real-time slack when ordering events of different processes, ms. */
  clockSlack?: number;
}

export interface CheckResult {
  ops: {
    invoked: number;
    granted: number;
    failed: Record<string, number>;
    lost: number;
    /** Grants lost within 2 ms of being granted: the holder never had a usable lock. */
    lostOnArrival: number;
    writesAccepted: number;
    writesRejected: number;
    writesSkippedAfterLost: number;
    readsRejected: number;
    readerSections: number;
  };
  finalValue: number;
  lostUpdates: number;
  chainBreaks: number;
  overlaps: number;
  readerWriterOverlaps: number;
  tokensBackwards: number;
  writesAfterLost: number;
  stuckWorkers: number[];
  acceptedWritesAfterHeal: number;
  unfenced: {
    writeAttempts: number;
    finalValue: number;
    lostUpdates: number;
    overlappingSections: number;
    /** Writes skipped because the holder's signal had aborted, where another holder wrote between its read and that moment: stale writes a holder that ignores its signal would have made. */
    staleWritesStoppedBySignal: number;
  };
  /** Human-readable findings, first 20 of each kind. */
  findings: string[];
  safe: boolean;
  live: boolean;
}

interface Section {
  attempt: string;
  reader: boolean;
  start: number;
  end?: number;
}

export function checkHistories(input: CheckInput): CheckResult {
  const findings: string[] = [];
  const note = (kind: string, text: string) => {
    if (findings.filter((f) => f.startsWith(kind)).length < 20) findings.push(`${kind}: ${text}`);
  };
  const slack = input.clockSlack ?? 2;
  const ops: CheckResult['ops'] = {
    invoked: 0,
    granted: 0,
    failed: {},
    lost: 0,
    lostOnArrival: 0,
    writesAccepted: 0,
    writesRejected: 0,
    writesSkippedAfterLost: 0,
    readsRejected: 0,
    readerSections: 0,
  };

  // Per-history facts: grants, loss, writes after loss.
  const grants: { op: string; invokeT: number; okT: number; token: bigint; mode: string }[] = [];
  let writesAfterLost = 0;
  const readyAt = new Map<number, { inc: number; t: number }>();
  const okTimes = new Map<number, number[]>();
  const skips: { op: string; t: number }[] = [];
  for (const history of input.histories) {
    const invokes = new Map<string, number>();
    const granted = new Map<string, number>();
    const lost = new Set<string>();
    for (const e of history) {
      switch (e.ev) {
        case 'ready': {
          const r = readyAt.get(e.slot);
          if (!r || r.inc < e.inc) readyAt.set(e.slot, { inc: e.inc, t: e.t });
          break;
        }
        case 'invoke':
          ops.invoked++;
          invokes.set(e.op, e.t);
          break;
        case 'ok': {
          ops.granted++;
          grants.push({
            op: e.op,
            invokeT: invokes.get(e.op) ?? e.t,
            okT: e.t,
            token: BigInt(e.token),
            mode: e.mode,
          });
          const slot = Number(e.op.split('.')[0]);
          okTimes.set(slot, [...(okTimes.get(slot) ?? []), e.t]);
          granted.set(e.op, e.t);
          break;
        }
        case 'fail':
          ops.failed[e.error] = (ops.failed[e.error] ?? 0) + 1;
          break;
        case 'lost':
          ops.lost++;
          lost.add(e.op);
          if (e.t - (granted.get(e.op) ?? -Infinity) <= 2) ops.lostOnArrival++;
          break;
        case 'skip-write':
          ops.writesSkippedAfterLost++;
          skips.push({ op: e.op, t: e.t });
          break;
        case 'write-invoke':
          if (lost.has(e.op)) {
            writesAfterLost++;
            note('write after lost', `op ${e.op} wrote ${e.value} after its signal aborted`);
          }
          break;
        default:
          break;
      }
    }
  }

  // The resource's view, in its own order.
  let lastValue = 0;
  let chainBreaks = 0;
  let acceptedWritesAfterHeal = 0;
  const accepted: Section[] = [];
  const attempted: Section[] = [];
  const openAccepted = new Map<string, Section>();
  const openAttempted = new Map<string, Section>();
  for (const r of input.records) {
    if (r.op === 'read' || r.op === 'rbegin') {
      const reader = r.op === 'rbegin';
      if (!r.accepted) ops.readsRejected++;
      const s = { attempt: r.attempt, reader, start: r.seq };
      if (!reader) openAttempted.set(r.attempt, s);
      if (r.accepted) openAccepted.set(r.attempt, { ...s });
      continue;
    }
    if (r.op === 'write') {
      if (r.accepted) {
        ops.writesAccepted++;
        if (r.t >= input.healAt) acceptedWritesAfterHeal++;
        if (r.value !== lastValue + 1) {
          chainBreaks++;
          note(
            'lost update',
            `op ${r.attempt} (token ${r.token}) wrote ${r.value} over ${lastValue}`,
          );
        }
        lastValue = r.value;
      } else ops.writesRejected++;
      const a = openAttempted.get(r.attempt);
      if (a) attempted.push({ ...a, end: r.seq });
    } else if (r.accepted) ops.readerSections++;
    const s = openAccepted.get(r.attempt);
    if (s && r.accepted) accepted.push({ ...s, end: r.seq });
  }
  const lostUpdates = Math.abs(ops.writesAccepted - input.value) + chainBreaks;

  // Overlaps as the resource saw them: a completed section containing another attempt's access.
  const byAttempt = new Map<string, boolean>();
  for (const s of accepted) byAttempt.set(s.attempt, s.reader);
  let overlaps = 0;
  let readerWriterOverlaps = 0;
  for (const s of accepted) {
    for (let seq = s.start + 1; seq < (s.end as number); seq++) {
      const r = input.records[seq];
      if (!r.accepted || r.attempt === s.attempt) continue;
      const otherIsReader = r.op === 'rbegin' || r.op === 'rend';
      if (s.reader && otherIsReader) continue;
      if (!s.reader && !otherIsReader) {
        overlaps++;
        note(
          'overlap',
          `writer ${s.attempt} [seq ${s.start}..${s.end}] saw writer ${r.attempt} ${r.op} at seq ${seq}`,
        );
      } else {
        readerWriterOverlaps++;
        note(
          'reader/writer overlap',
          `${s.reader ? 'reader' : 'writer'} ${s.attempt} [seq ${s.start}..${s.end}] saw ${r.op} of ${r.attempt} at seq ${seq}`,
        );
      }
      break;
    }
  }
  let overlappingSections = 0;
  for (const s of attempted) {
    for (let seq = s.start + 1; seq < (s.end as number); seq++) {
      const r = input.records[seq];
      if (r.op === 'write' && r.attempt !== s.attempt) {
        overlappingSections++;
        break;
      }
    }
  }

  // Skipped writes that would have been stale: another accepted write between the read and the skip.
  const readSeq = new Map<string, number>();
  for (const r of input.records) if (r.op === 'read' && r.accepted) readSeq.set(r.attempt, r.seq);
  let staleWritesStoppedBySignal = 0;
  for (const skip of skips) {
    const from = readSeq.get(skip.op);
    if (from === undefined) continue;
    for (let seq = from + 1; seq < input.records.length && input.records[seq].t <= skip.t; seq++) {
      const r = input.records[seq];
      if (r.op === 'write' && r.accepted && r.attempt !== skip.op) {
        staleWritesStoppedBySignal++;
        break;
      }
    }
  }

  // Tokens in real time: a grant invoked after another grant completed must carry a larger token.
  let tokensBackwards = 0;
  const byOk = [...grants].sort((a, b) => a.okT - b.okT);
  const byInvoke = grants
    .filter((g) => g.mode === 'exclusive')
    .sort((a, b) => a.invokeT - b.invokeT);
  let i = 0;
  let max: { token: bigint; op: string } | undefined;
  for (const g of byInvoke) {
    while (i < byOk.length && byOk[i].okT + slack < g.invokeT) {
      if (!max || byOk[i].token > max.token) max = { token: byOk[i].token, op: byOk[i].op };
      i++;
    }
    if (max && g.token <= max.token) {
      tokensBackwards++;
      note(
        'token backwards',
        `op ${g.op} got ${g.token} after op ${max.op} had been granted ${max.token}`,
      );
    }
  }

  // Liveness: every slot's latest incarnation got the lock within 2 x ttl + wait after the heal.
  const window = 2 * input.ttl + input.wait;
  const stuckWorkers: number[] = [];
  for (let slot = 0; slot < input.slots; slot++) {
    const from = Math.max(input.healAt, readyAt.get(slot)?.t ?? Infinity);
    if (!(okTimes.get(slot) ?? []).some((t) => t >= from && t <= from + window)) {
      stuckWorkers.push(slot);
      note(
        'stuck',
        `worker ${slot} got no grant within ${window} ms after ${from === Infinity ? 'start (never ready)' : 'the heal'}`,
      );
    }
  }
  const writers = input.records.some((r) => r.op === 'write');
  if (writers && acceptedWritesAfterHeal === 0)
    note('stuck', 'the fenced resource accepted no write after the heal');

  const unfencedLost = ops.writesAccepted + ops.writesRejected - input.shadow;
  const tokenViolation = input.fencing === 'strict' ? tokensBackwards : 0;
  return {
    ops,
    finalValue: input.value,
    lostUpdates,
    chainBreaks,
    overlaps,
    readerWriterOverlaps,
    tokensBackwards,
    writesAfterLost,
    stuckWorkers,
    acceptedWritesAfterHeal,
    unfenced: {
      writeAttempts: ops.writesAccepted + ops.writesRejected,
      finalValue: input.shadow,
      lostUpdates: unfencedLost,
      overlappingSections,
      staleWritesStoppedBySignal,
    },
    findings,
    safe:
      lostUpdates === 0 &&
      overlaps === 0 &&
      readerWriterOverlaps === 0 &&
      tokenViolation === 0 &&
      (input.signalCheck === false || writesAfterLost === 0),
    live: stuckWorkers.length === 0 && (!writers || acceptedWritesAfterHeal > 0),
  };
}
