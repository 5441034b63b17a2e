/**
 * Periodic clean-up of rows nobody will take over: an abandoned holder's row is normally taken over
 * by the next acquire of its key, but a key that is never locked again would keep its expired row
 * forever. Every `interval` ms (jittered, so processes spread out) the backend deletes a bounded
 * batch of rows that expired more than SWEEP_GRACE_MS ago, by the server's clock. Safe without the
 * key's mutex: such a row's holder can no longer renew it, and a concurrent acquire that has locked
 * the row makes the delete wait and re-check it. Started by the first acquire, stopped by close();
 * never throws from its timer and never keeps the process alive.
 */
export const SWEEP_GRACE_MS = 60_000;
export const SWEEP_BATCH = 1_000;

export class SqlSweeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly interval: number,
    private readonly sweep: () => Promise<unknown>,
  ) {}

  /** Idempotent; a no-op when the interval is 0 (sweeping disabled) or after stop(). */
  start(): void {
    if (this.interval === 0 || this.stopped || this.timer) return;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.run(), this.interval * (0.5 + Math.random()));
    this.timer.unref();
  }

  private async run(): Promise<void> {
    try {
      await this.sweep();
    } catch {
      // The database may be down: the next round tries again.
    }
    if (!this.stopped) this.schedule();
  }
}
