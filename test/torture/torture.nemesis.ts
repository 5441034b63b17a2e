import type { TcpProxy } from '../support/tcp-proxy';
import { now, type NemesisEvent } from './history.types';
import type { ServerControl } from './torture.backends';
import type { Fault } from './torture.options';
import { SeededRandom } from './seeded.random';

/**
 * Injects faults on a seeded schedule, one at a time, until told to stop, then heals everything:
 * - kill: SIGKILL a worker (its locks must expire on their own) and start a new incarnation;
 * - pause: SIGSTOP a worker for 1.5-3 x ttl (its lock expires while it sleeps), then SIGCONT;
 * - restart: SIGKILL a backend server (or cluster member) and start it again after up to a ttl;
 * - partition: hold all traffic between one worker and the servers for 1-4 x ttl, then either
 *   let it through or reset the connections;
 * - delay: add latency with jitter to one worker's proxies (half the time: every worker's, each
 *   with its own draw) for 2-5 x ttl: chunks stay in order per connection and are reordered across
 *   connections and clients; delay up to ttl / 5, jitter up to ttl / 5 more;
 * - clock: run one worker's clocks (performance.now, Date.now, timers) at a seeded rate within
 *   `clockRates` for 2-6 x ttl, then at 1 again (clock-rate.ts).
 * Targets are the current holder (as the fenced store last saw it) 70 % of the time: a fault on a
 * worker that holds nothing proves little.
 */
export interface NemesisWorker {
  readonly slot: number;
  signal(sig: NodeJS.Signals): void;
  /** SIGKILL this incarnation and start the next; resolves when the new one is ready. */
  replace(): Promise<void>;
  readonly proxies: TcpProxy[];
  /** Sets the rate of this worker's clocks (1: real time); no-op when the worker is not running. */
  setClockRate(rate: number): void;
}

export interface NemesisTargets {
  workers: NemesisWorker[];
  servers: ServerControl[];
  /** Slot of the worker that most recently entered the critical section, if known. */
  holder(): number | undefined;
}

export class Nemesis {
  readonly events: NemesisEvent[] = [];
  readonly counts: Record<Fault, number> = {
    kill: 0,
    pause: 0,
    restart: 0,
    partition: 0,
    delay: 0,
    clock: 0,
  };
  private readonly rng: SeededRandom;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(
    seed: number,
    private readonly faults: Fault[],
    private readonly ttl: number,
    private readonly targets: NemesisTargets,
    private readonly clockRates: [number, number] = [0.99, 1.05],
  ) {
    this.rng = new SeededRandom(seed);
  }

  /** Runs faults until `until` (ms clock of now()) or stop(); always ends with everything healed. */
  async run(until: number): Promise<void> {
    const faults = this.faults.filter((f) => f !== 'restart' || this.targets.servers.length > 0);
    // Rounds of a seeded shuffle: every kind of fault comes up, and the first round always runs to
    // the end (a short CI run still sees each kind once).
    let round: Fault[] = [];
    let injected = 0;
    while (faults.length > 0) {
      const firstRoundDone = injected >= faults.length;
      await this.sleep(this.rng.int(Math.round(this.ttl / 4), this.ttl), !firstRoundDone);
      if (firstRoundDone && (this.stopped || now() >= until)) break;
      if (round.length === 0) round = this.rng.shuffle(faults);
      await this.inject(round.shift() as Fault);
      injected++;
    }
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  private async inject(fault: Fault): Promise<void> {
    this.counts[fault]++;
    switch (fault) {
      case 'kill': {
        const w = this.worker();
        this.log(fault, `worker ${w.slot}`, 'start');
        await w.replace();
        this.log(fault, `worker ${w.slot}`, 'end', 'new incarnation ready');
        return;
      }
      case 'pause': {
        const w = this.worker();
        const ms = this.rng.int(Math.round(1.5 * this.ttl), 3 * this.ttl);
        this.log(fault, `worker ${w.slot}`, 'start', `SIGSTOP for ${ms} ms`);
        w.signal('SIGSTOP');
        await this.sleep(ms, true);
        w.signal('SIGCONT');
        this.log(fault, `worker ${w.slot}`, 'end', 'SIGCONT');
        return;
      }
      case 'restart': {
        const server = this.rng.pick(this.targets.servers);
        const ms = this.rng.int(0, this.ttl);
        this.log(fault, server.name, 'start', `SIGKILL, down for ${ms} ms`);
        await server.kill();
        await this.sleep(ms, true);
        // A server slow to come back on a loaded machine (its harness gives up after a while) is
        // killed and started again, a few times, before the run fails.
        for (let attempt = 1; ; attempt++) {
          try {
            await server.start();
            break;
          } catch (error) {
            if (attempt >= 3) throw error;
            this.log(fault, server.name, 'start', `start ${attempt} failed: ${String(error)}`);
            await server.kill().catch(() => undefined);
          }
        }
        this.log(fault, server.name, 'end', 'started');
        return;
      }
      case 'partition': {
        const w = this.worker();
        const ms = this.rng.int(this.ttl, 4 * this.ttl);
        const reset = this.rng.next() < 0.5;
        this.log(
          fault,
          `worker ${w.slot}`,
          'start',
          `traffic held for ${ms} ms, then ${reset ? 'connections reset' : 'let through'}`,
        );
        for (const p of w.proxies) p.blackhole();
        await this.sleep(ms, true);
        for (const p of w.proxies) {
          if (reset) p.resetAll();
          p.heal();
        }
        this.log(fault, `worker ${w.slot}`, 'end');
        return;
      }
      case 'delay': {
        const all = this.rng.next() < 0.5;
        const targets = all ? this.targets.workers : [this.worker()];
        const ms = this.rng.int(2 * this.ttl, 5 * this.ttl);
        const detail: string[] = [];
        for (const w of targets) {
          const delay = this.rng.int(1, Math.max(1, Math.round(this.ttl / 5)));
          const jitter = this.rng.int(0, Math.max(1, Math.round(this.ttl / 5)));
          const draw = new SeededRandom(this.rng.int(0, 2 ** 31 - 1));
          for (const p of w.proxies) {
            p.delay = delay;
            p.jitter = jitter;
            p.random = () => draw.next();
          }
          detail.push(`${w.slot}: ${delay}+${jitter} ms`);
        }
        const target = all ? 'every worker' : `worker ${targets[0].slot}`;
        this.log(fault, target, 'start', `latency ${detail.join(', ')} for ${ms} ms`);
        await this.sleep(ms, true);
        for (const w of targets)
          for (const p of w.proxies) {
            p.delay = 0;
            p.jitter = 0;
          }
        this.log(fault, target, 'end');
        return;
      }
      case 'clock': {
        const w = this.worker();
        const [min, max] = this.clockRates;
        const rate = Math.round((min + this.rng.next() * (max - min)) * 10_000) / 10_000;
        const ms = this.rng.int(2 * this.ttl, 6 * this.ttl);
        this.log(fault, `worker ${w.slot}`, 'start', `clock rate ${rate} for ${ms} ms`);
        w.setClockRate(rate);
        await this.sleep(ms, true);
        w.setClockRate(1);
        this.log(fault, `worker ${w.slot}`, 'end', 'clock rate 1');
        return;
      }
    }
  }

  private worker(): NemesisWorker {
    const holder = this.targets.holder();
    const useHolder = this.rng.next() < 0.7;
    const random = this.rng.int(0, this.targets.workers.length - 1);
    return this.targets.workers[useHolder && holder !== undefined ? holder : random];
  }

  private log(fault: Fault, target: string, phase: 'start' | 'end', detail?: string): void {
    this.events.push({ t: now(), fault, target, phase, detail });
  }

  /** A fault's own duration is not cut short by stop(): a paused worker must get its SIGCONT. */
  private sleep(ms: number, uninterruptible = false): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      if (!uninterruptible) {
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }
    });
  }
}
