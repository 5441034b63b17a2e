import { DEFAULT_KEY, type HistoryEvent, type StoreRecord, type Workload } from './history.types';

/**
 * Reads every worker history and the fenced store's log and judges the run. Safety: no lost update
 * at the fenced resource, no two exclusive critical sections (or a reader and a writer) overlapping
 * as the resource saw them, no token that went backwards in real time, no write attempted after the
 * writer's own signal aborted. Liveness: after the nemesis healed everything, every worker got the
 * lock within 2 x ttl + wait, and the resource accepted writes again. Also what an unfenced
 * resource would have lost, from the store's shadow counter.
 *
 * Several resources: every lock key has its own fenced counter, and the counter rules above run per
 * key (a multi-key grant is checked on each of its keys against every other grant of that key).
 * Fencing tokens are ordered per key (a permit-based semaphore's per permit). A semaphore key
 * allows N holders: a holder's permit interval runs from its begin at the store to the last moment
 * its own signal was seen intact (the `valid` event, on the same host clock), and no instant may be
 * inside more than N such intervals.
 */
export interface CheckInput {
  histories: HistoryEvent[][];
  records: StoreRecord[];
  /** Final values of the DEFAULT_KEY fenced counter and of its unfenced shadow counter. */
  value: number;
  shadow: number;
  /** Every key's final values (FencedStore.values()); DEFAULT_KEY falls back to value/shadow. */
  values?: Record<string, { value: number; shadow: number }>;
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
    /** Grants by workload (plain lock, semaphore permit, multi-key lock). */
    grantedBy: Record<Workload, number>;
    /** Semaphore sections counted (their holder's signal was intact at the end). */
    semaphoreSections: number;
  };
  /** The DEFAULT_KEY counter's final value. */
  finalValue: number;
  /** Every counter's final value, by key (their sum is the accepted writes of a clean run). */
  finalValues: Record<string, number>;
  lostUpdates: number;
  chainBreaks: number;
  overlaps: number;
  readerWriterOverlaps: number;
  tokensBackwards: number;
  /** Instants where more holders than their permits held a semaphore key. */
  semaphoreOverflows: number;
  /** The most holders seen at once, per semaphore key (for the report). */
  maxHolders: Record<string, number>;
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

interface Grant {
  op: string;
  invokeT: number;
  okT: number;
  /** Token per token key (the lock key, or a semaphore's permit key). */
  tokens: Map<string, bigint>;
  mode: string;
}

/** The store key of a record. */
export function keyOf(r: StoreRecord): string {
  return r.key ?? DEFAULT_KEY;
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
    grantedBy: { plain: 0, semaphore: 0, multi: 0 },
    semaphoreSections: 0,
  };

  // Per-history facts: grants, loss, writes after loss.
  const grants: Grant[] = [];
  /** Semaphore ops: key, permits, and when the holder last saw its signal intact. */
  const permits = new Map<string, { key: string; permits: number; validT?: number }>();
  let writesAfterLost = 0;
  const readyAt = new Map<number, { inc: number; t: number }>();
  const okTimes = new Map<number, number[]>();
  const skips: { op: string; t: number }[] = [];
  for (const history of input.histories) {
    const invokes = new Map<string, Extract<HistoryEvent, { ev: 'invoke' }>>();
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
          invokes.set(e.op, e);
          if (e.workload === 'semaphore')
            permits.set(e.op, { key: e.keys?.[0] ?? DEFAULT_KEY, permits: e.permits ?? 1 });
          break;
        case 'ok': {
          ops.granted++;
          const inv = invokes.get(e.op);
          ops.grantedBy[inv?.workload ?? 'plain']++;
          const tokens = new Map<string, bigint>(
            e.tokens
              ? Object.entries(e.tokens).map(([k, v]) => [k, BigInt(v)])
              : [[inv?.keys?.[0] ?? DEFAULT_KEY, BigInt(e.token)]],
          );
          grants.push({ op: e.op, invokeT: inv?.t ?? e.t, okT: e.t, tokens, mode: e.mode });
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
        case 'valid': {
          const permit = permits.get(e.op);
          if (permit) permit.validT = e.t;
          break;
        }
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

  // The resource's view, in its own order, one fenced counter per key.
  const byKey = new Map<string, StoreRecord[]>();
  for (const r of input.records) {
    if (r.op === 'sbegin' || r.op === 'send') continue;
    const list = byKey.get(keyOf(r)) ?? [];
    list.push(r);
    byKey.set(keyOf(r), list);
  }
  let chainBreaks = 0;
  let lostUpdates = 0;
  let acceptedWritesAfterHeal = 0;
  let overlaps = 0;
  let readerWriterOverlaps = 0;
  let overlappingSections = 0;
  let staleWritesStoppedBySignal = 0;
  let shadowLost = 0;
  let writeAttempts = 0;
  for (const [key, records] of byKey) {
    const final =
      input.values?.[key] ??
      (key === DEFAULT_KEY
        ? { value: input.value, shadow: input.shadow }
        : { value: 0, shadow: 0 });
    const c = checkCounter(key, records, final, input.healAt, skips, note, ops);
    chainBreaks += c.chainBreaks;
    lostUpdates += c.lostUpdates;
    acceptedWritesAfterHeal += c.acceptedWritesAfterHeal;
    overlaps += c.overlaps;
    readerWriterOverlaps += c.readerWriterOverlaps;
    overlappingSections += c.overlappingSections;
    staleWritesStoppedBySignal += c.staleWritesStoppedBySignal;
    shadowLost += c.writeAttempts - final.shadow;
    writeAttempts += c.writeAttempts;
  }

  // Semaphores: at most N holders of a key at any instant, each counted from its begin at the store
  // to the last moment its own signal was intact (a holder past its validity holds nothing).
  const begins = new Map<string, number>();
  for (const r of input.records) if (r.op === 'sbegin') begins.set(r.attempt, r.t);
  const intervals = new Map<
    string,
    { op: string; start: number; end: number; permits: number }[]
  >();
  for (const [op, permit] of permits) {
    const start = begins.get(op);
    if (start === undefined || permit.validT === undefined) continue;
    ops.semaphoreSections++;
    const list = intervals.get(permit.key) ?? [];
    list.push({ op, start, end: permit.validT, permits: permit.permits });
    intervals.set(permit.key, list);
  }
  let semaphoreOverflows = 0;
  const maxHolders: Record<string, number> = {};
  for (const [key, list] of intervals) {
    // Sweep: an interval ends `slack` ms early (two processes' events on one host clock); at a tie
    // an end comes before a start.
    const points = list.flatMap((iv) => [
      { t: iv.start, d: 1, iv },
      { t: iv.end - slack, d: -1, iv },
    ]);
    points.sort((a, b) => a.t - b.t || a.d - b.d);
    const active = new Set<string>();
    let most = 0;
    for (const p of points) {
      if (p.d < 0) {
        active.delete(p.iv.op);
        continue;
      }
      if (p.iv.end - slack <= p.iv.start) continue; // shorter than the slack: never counted
      active.add(p.iv.op);
      most = Math.max(most, active.size);
      if (active.size > p.iv.permits) {
        semaphoreOverflows++;
        note(
          'semaphore overflow',
          `${key}: op ${p.iv.op} (permits ${p.iv.permits}) began at ${p.t.toFixed(1)} while ${[...active].filter((o) => o !== p.iv.op).join(', ')} held it`,
        );
      }
    }
    maxHolders[key] = most;
  }

  // Tokens in real time, per token key: a grant invoked after another grant of that key completed
  // must carry a larger token.
  let tokensBackwards = 0;
  const tokenKeys = new Set(grants.flatMap((g) => [...g.tokens.keys()]));
  for (const key of tokenKeys) {
    const of = grants
      .filter((g) => g.tokens.has(key))
      .map((g) => ({ ...g, token: g.tokens.get(key) as bigint }));
    const byOk = [...of].sort((a, b) => a.okT - b.okT);
    const byInvoke = of.filter((g) => g.mode === 'exclusive').sort((a, b) => a.invokeT - b.invokeT);
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
          `${key === DEFAULT_KEY ? '' : `${key}: `}op ${g.op} got ${g.token} after op ${max.op} had been granted ${max.token}`,
        );
      }
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

  const tokenViolation = input.fencing === 'strict' ? tokensBackwards : 0;
  return {
    ops,
    finalValue: input.value,
    finalValues: Object.fromEntries(
      Object.entries(input.values ?? { [DEFAULT_KEY]: { value: input.value } }).map(([k, v]) => [
        k,
        v.value,
      ]),
    ),
    lostUpdates,
    chainBreaks,
    overlaps,
    readerWriterOverlaps,
    tokensBackwards,
    semaphoreOverflows,
    maxHolders,
    writesAfterLost,
    stuckWorkers,
    acceptedWritesAfterHeal,
    unfenced: {
      writeAttempts,
      finalValue: input.shadow,
      lostUpdates: shadowLost,
      overlappingSections,
      staleWritesStoppedBySignal,
    },
    findings,
    safe:
      lostUpdates === 0 &&
      overlaps === 0 &&
      readerWriterOverlaps === 0 &&
      tokenViolation === 0 &&
      semaphoreOverflows === 0 &&
      (input.signalCheck === false || writesAfterLost === 0),
    live: stuckWorkers.length === 0 && (!writers || acceptedWritesAfterHeal > 0),
  };
}

type Note = (kind: string, text: string) => void;

/** The counter rules on one key's records (the store's order): lost updates, overlaps, shadow. */
function checkCounter(
  key: string,
  records: StoreRecord[],
  final: { value: number; shadow: number },
  healAt: number,
  skips: { op: string; t: number }[],
  note: Note,
  ops: CheckResult['ops'],
) {
  const where = key === DEFAULT_KEY ? '' : `${key}: `;
  let lastValue = 0;
  let chainBreaks = 0;
  let acceptedWritesAfterHeal = 0;
  let writesAccepted = 0;
  let writeAttempts = 0;
  const accepted: Section[] = [];
  const attempted: Section[] = [];
  const openAccepted = new Map<string, Section>();
  const openAttempted = new Map<string, Section>();
  // Positions are indices into this key's records (the store's order restricted to the key).
  records.forEach((r, pos) => {
    if (r.op === 'read' || r.op === 'rbegin') {
      const reader = r.op === 'rbegin';
      if (!r.accepted) ops.readsRejected++;
      const s = { attempt: r.attempt, reader, start: pos };
      if (!reader) openAttempted.set(r.attempt, s);
      if (r.accepted) openAccepted.set(r.attempt, { ...s });
      return;
    }
    if (r.op === 'write') {
      writeAttempts++;
      if (r.accepted) {
        ops.writesAccepted++;
        writesAccepted++;
        if (r.t >= healAt) acceptedWritesAfterHeal++;
        if (r.value !== lastValue + 1) {
          chainBreaks++;
          note(
            'lost update',
            `${where}op ${r.attempt} (token ${r.token}) wrote ${r.value} over ${lastValue}`,
          );
        }
        lastValue = r.value;
      } else ops.writesRejected++;
      const a = openAttempted.get(r.attempt);
      if (a) attempted.push({ ...a, end: pos });
    } else if (r.accepted) ops.readerSections++;
    const s = openAccepted.get(r.attempt);
    if (s && r.accepted) accepted.push({ ...s, end: pos });
  });
  const lostUpdates = Math.abs(writesAccepted - final.value) + chainBreaks;

  // Overlaps as the resource saw them: a completed section containing another attempt's access.
  let overlaps = 0;
  let readerWriterOverlaps = 0;
  for (const s of accepted) {
    for (let pos = s.start + 1; pos < (s.end as number); pos++) {
      const r = records[pos];
      if (!r.accepted || r.attempt === s.attempt) continue;
      const otherIsReader = r.op === 'rbegin' || r.op === 'rend';
      if (s.reader && otherIsReader) continue;
      const span = `[seq ${records[s.start].seq}..${records[s.end as number].seq}]`;
      if (!s.reader && !otherIsReader) {
        overlaps++;
        note(
          'overlap',
          `${where}writer ${s.attempt} ${span} saw writer ${r.attempt} ${r.op} at seq ${r.seq}`,
        );
      } else {
        readerWriterOverlaps++;
        note(
          'reader/writer overlap',
          `${where}${s.reader ? 'reader' : 'writer'} ${s.attempt} ${span} saw ${r.op} of ${r.attempt} at seq ${r.seq}`,
        );
      }
      break;
    }
  }
  let overlappingSections = 0;
  for (const s of attempted) {
    for (let pos = s.start + 1; pos < (s.end as number); pos++) {
      const r = records[pos];
      if (r.op === 'write' && r.attempt !== s.attempt) {
        overlappingSections++;
        break;
      }
    }
  }

  // Skipped writes that would have been stale: another accepted write between the read and the skip.
  const readPos = new Map<string, number>();
  records.forEach((r, pos) => {
    if (r.op === 'read' && r.accepted) readPos.set(r.attempt, pos);
  });
  let staleWritesStoppedBySignal = 0;
  for (const skip of skips) {
    const from = readPos.get(skip.op);
    if (from === undefined) continue;
    for (let pos = from + 1; pos < records.length && records[pos].t <= skip.t; pos++) {
      const r = records[pos];
      if (r.op === 'write' && r.accepted && r.attempt !== skip.op) {
        staleWritesStoppedBySignal++;
        break;
      }
    }
  }
  return {
    chainBreaks,
    lostUpdates,
    acceptedWritesAfterHeal,
    overlaps,
    readerWriterOverlaps,
    overlappingSections,
    staleWritesStoppedBySignal,
    writeAttempts,
  };
}
