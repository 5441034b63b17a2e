import type { Server } from 'node:net';
import { serveJsonLines, type JsonMessage } from './json-lines.channel';
import { DEFAULT_KEY, now, type StoreOp, type StoreRecord } from './history.types';
import type { TortureFence } from './torture.fences';

/** One fenced counter (one per lock key). */
interface Counter {
  value: number;
  shadow: number;
  highest: bigint;
  highestWriter: bigint;
}

/**
 * The protected resource: one counter, owned by the harness, outside the lock service. It fences
 * every access, as Kleppmann's storage service does: an exclusive holder's read or write whose
 * token is lower than the highest token the store has accepted is refused; a reader's begin/end is
 * refused when its token is lower than the highest accepted writer token. Reads are fenced too:
 * fencing only writes lets a stale holder that read before a newer holder write after that holder
 * read, which is a lost update. Every access is recorded, accepted or not.
 *
 * Alongside, a shadow counter applies every write attempt without a token check: what the same
 * workers would have done to an unfenced resource (lock + signal check, no fence).
 *
 * With a `fence` (torture.fences.ts: the package's own RedisFencedStore, PostgresFencedStore,
 * MySqlFencedStore or MemoryFenceStore), that fence alone decides every counter read and write
 * and holds the value; this store serialises each key's accesses (so its record order is the
 * fence's decision order) and mirrors the value. Shared mode's readers' rule stays here (a
 * reader's begin/end is refused when older than the highest accepted writer token: concurrent
 * readers carry different tokens, so one highest token cannot admit them all), but an admitted
 * reader advances the package's fence with its token at once, so a writer older than that reader
 * is refused by the fence itself, from the reader's begin on.
 *
 * Every lock key has its own counter (plain and multi-key grants). A semaphore key is a permit
 * table: holders bracket their section with sbegin/send, always accepted and recorded (N holders
 * at once are legitimate, so no token order can fence them; the checker counts the permits).
 */
export class FencedStore {
  readonly counters = new Map<string, Counter>();
  readonly records: StoreRecord[] = [];
  /** Worker slot that last entered a critical section (the nemesis's favourite target). */
  lastEntrant: number | undefined;
  /** Accepted fenced reads whose value differed from this store's mirror (must stay 0). */
  fenceMismatches = 0;
  private server: Server | undefined;
  private readonly queues = new Map<string, Promise<unknown>>();

  /** The DEFAULT_KEY counter's final value (fenced) and its unfenced shadow. */
  get value(): number {
    return this.counter(DEFAULT_KEY).value;
  }

  get shadow(): number {
    return this.counter(DEFAULT_KEY).shadow;
  }

  /** Every counter's final values, by key. */
  values(): Record<string, { value: number; shadow: number }> {
    const out: Record<string, { value: number; shadow: number }> = {};
    for (const [key, c] of this.counters) out[key] = { value: c.value, shadow: c.shadow };
    return out;
  }

  private counter(key: string): Counter {
    let c = this.counters.get(key);
    if (!c) this.counters.set(key, (c = { value: 0, shadow: 0, highest: -1n, highestWriter: -1n }));
    return c;
  }

  /** `clock`: ms on the histories' clock (injectable for the checker's tests). */
  constructor(
    private readonly clock: () => number = now,
    private readonly fence?: TortureFence,
  ) {}

  async listen(port: number): Promise<void> {
    this.server = await serveJsonLines(port, (request) => this.serve(request));
  }

  /** One request, after every earlier request on the same key (the fence's order is the records'). */
  serve(request: JsonMessage): Promise<JsonMessage> {
    const key = typeof request.key === 'string' ? request.key : DEFAULT_KEY;
    const fenced = this.fence && request.op !== 'sbegin' && request.op !== 'send';
    const run = () => (fenced ? this.viaFence(request, key) : this.handle(request));
    const answer = (this.queues.get(key) ?? Promise.resolve()).then(run, run);
    this.queues.set(
      key,
      answer.catch(() => undefined),
    );
    return answer;
  }

  /** A counter access decided by the package's fence (see the class comment). */
  private async viaFence(request: JsonMessage, key: string): Promise<JsonMessage> {
    const fence = this.fence as TortureFence;
    const op = request.op as 'read' | 'write' | 'rbegin' | 'rend';
    const token = BigInt(request.token as string);
    const attempt = String(request.attempt);
    const c = this.counter(key);
    const max = (a: bigint, b: bigint) => (a > b ? a : b);
    switch (op) {
      case 'read': {
        const r = await fence.read(key, token);
        if (r.accepted) {
          c.highest = max(c.highest, token);
          c.highestWriter = max(c.highestWriter, token);
          if (r.value !== c.value) this.fenceMismatches++;
        }
        this.record(op, attempt, key, token, r.accepted, c.value);
        return { accepted: r.accepted, value: c.value, shadow: c.shadow };
      }
      case 'write': {
        const value = Number(request.value);
        const { accepted } = await fence.write(key, token, value);
        if (accepted) {
          c.value = value;
          c.highest = max(c.highest, token);
          c.highestWriter = max(c.highestWriter, token);
        }
        c.shadow = Number(request.shadow);
        this.record(op, attempt, key, token, accepted, value);
        return { accepted };
      }
      case 'rbegin':
      case 'rend': {
        const accepted = token >= c.highestWriter;
        // A refusal here only means a concurrent reader's newer token is already the fence's.
        if (accepted) await fence.advance(key, token);
        if (accepted) c.highest = max(c.highest, token);
        this.record(op, attempt, key, token, accepted, c.value);
        return { accepted, value: c.value };
      }
      default:
        throw new Error(`unknown store op ${String(op)}`);
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) =>
      this.server ? this.server.close(() => resolve()) : resolve(),
    );
  }

  handle(request: JsonMessage): JsonMessage {
    const op = request.op as StoreOp;
    const token = BigInt(request.token as string);
    const attempt = String(request.attempt);
    const key = typeof request.key === 'string' ? request.key : DEFAULT_KEY;
    let accepted: boolean;
    if (op === 'sbegin' || op === 'send') {
      this.record(op, attempt, key, token, true, 0);
      return { accepted: true };
    }
    const c = this.counter(key);
    let value = c.value;
    switch (op) {
      case 'read':
        accepted = token >= c.highest;
        if (accepted) c.highest = c.highestWriter = token;
        this.record(op, attempt, key, token, accepted, value);
        return { accepted, value, shadow: c.shadow };
      case 'write':
        accepted = token >= c.highest;
        value = Number(request.value);
        if (accepted) c.value = value;
        c.shadow = Number(request.shadow);
        this.record(op, attempt, key, token, accepted, value);
        return { accepted };
      case 'rbegin':
      case 'rend':
        accepted = token >= c.highestWriter;
        if (accepted && token > c.highest) c.highest = token;
        this.record(op, attempt, key, token, accepted, value);
        return { accepted, value };
      default:
        throw new Error(`unknown store op ${String(op)}`);
    }
  }

  private record(
    op: StoreOp,
    attempt: string,
    key: string,
    token: bigint,
    accepted: boolean,
    value: number,
  ): void {
    if (accepted && (op === 'read' || op === 'rbegin' || op === 'sbegin'))
      this.lastEntrant = Number(attempt.split('.')[0]);
    this.records.push({
      seq: this.records.length,
      t: this.clock(),
      op,
      attempt,
      ...(key === DEFAULT_KEY ? {} : { key }),
      token: token.toString(),
      accepted,
      value,
    });
  }
}
