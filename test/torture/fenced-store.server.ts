import type { Server } from 'node:net';
import { serveJsonLines, type JsonMessage } from './json-lines.channel';
import { now, type StoreOp, type StoreRecord } from './history.types';

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
 */
export class FencedStore {
  value = 0;
  shadow = 0;
  readonly records: StoreRecord[] = [];
  /** Worker slot that last entered a critical section (the nemesis's favourite target). */
  lastEntrant: number | undefined;
  private highest = -1n;
  private highestWriter = -1n;
  private server: Server | undefined;

  /** `clock`: ms on the histories' clock (injectable for the checker's tests). */
  constructor(private readonly clock: () => number = now) {}

  async listen(port: number): Promise<void> {
    this.server = await serveJsonLines(port, (request) => this.handle(request));
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
    let accepted: boolean;
    let value = this.value;
    switch (op) {
      case 'read':
        accepted = token >= this.highest;
        if (accepted) this.highest = this.highestWriter = token;
        this.record(op, attempt, token, accepted, value);
        return { accepted, value, shadow: this.shadow };
      case 'write':
        accepted = token >= this.highest;
        value = Number(request.value);
        if (accepted) this.value = value;
        this.shadow = Number(request.shadow);
        this.record(op, attempt, token, accepted, value);
        return { accepted };
      case 'rbegin':
      case 'rend':
        accepted = token >= this.highestWriter;
        if (accepted && token > this.highest) this.highest = token;
        this.record(op, attempt, token, accepted, value);
        return { accepted, value };
      default:
        throw new Error(`unknown store op ${String(op)}`);
    }
  }

  private record(
    op: StoreOp,
    attempt: string,
    token: bigint,
    accepted: boolean,
    value: number,
  ): void {
    if (accepted && (op === 'read' || op === 'rbegin'))
      this.lastEntrant = Number(attempt.split('.')[0]);
    this.records.push({
      seq: this.records.length,
      t: this.clock(),
      op,
      attempt,
      token: token.toString(),
      accepted,
      value,
    });
  }
}
