import { BACKEND_NAMES, TORTURE_BACKENDS, type BackendName } from './torture.backends';
import { WORKLOADS, type Workload } from './history.types';

/**
 * Command-line options of `npm run torture`, validated in one place. Bad input is a UsageError that
 * names the flag, the value and what is allowed; nothing starts before the options are valid.
 */
export const FAULTS = ['kill', 'pause', 'restart', 'partition', 'delay', 'clock'] as const;
/**
 * Default clock rates of the clock nemesis: inside the library's drift model (validity.ts counts on
 * ttl - (1 % of ttl + 2 ms), so a holder's clock may run down to 0.99 x real time; fast clocks only
 * make a holder give up early).
 */
export const DEFAULT_CLOCK_RATES: [number, number] = [0.99, 1.05];
export type Fault = (typeof FAULTS)[number];

export interface TortureOptions {
  backend: BackendName;
  workers: number;
  durationMs: number;
  faults: Fault[];
  seed: number;
  mode: 'exclusive' | 'shared';
  ttl: number;
  wait: number;
  /** Workers check their handle's signal before writing (default); false shows what fencing alone does. */
  signalCheck: boolean;
  /** Where the JSON report goes; default <run dir>/report.json. */
  report?: string;
  /** What writers do per operation (seeded draw); default every workload. */
  workloads?: Workload[];
  /** [min, max] rate of a worker's clock under the clock nemesis; default DEFAULT_CLOCK_RATES. */
  clockRates?: [number, number];
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE = `usage: npm run torture -- --backend <${BACKEND_NAMES.join('|')}> [--workers 8] [--duration 60s]
       [--faults kill,pause,restart,partition,delay,clock|none] [--seed N] [--mode exclusive|shared]
       [--workload plain,semaphore,multi] [--clock-rate 0.99..1.05]
       [--ttl 500ms (etcd 2s, zookeeper 1.5s)] [--wait 2s] [--signal-check on|off] [--report path.json]`;

/** "60s", "1.5m", "500ms", "2000" (ms) -> ms. */
export function parseDuration(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m)
    throw new UsageError(
      `--${flag}: cannot parse "${text}" as a duration; use e.g. 500ms, 20s, 10m`,
    );
  const ms = Math.round(
    Number(m[1]) * ({ ms: 1, s: 1_000, m: 60_000 } as const)[(m[2] ?? 'ms') as 'ms' | 's' | 'm'],
  );
  if (ms <= 0) throw new UsageError(`--${flag}: must be longer than 0 (got "${text}")`);
  return ms;
}

function parseInteger(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${flag}: got "${text}"; allowed: an integer from ${min} to ${max}`);
  }
  return n;
}

export function parseTortureArgs(argv: readonly string[]): TortureOptions {
  const raw = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const m = /^--([a-z][a-z-]*)(?:=(.*))?$/.exec(arg);
    if (!m) throw new UsageError(`unexpected argument "${arg}"\n${USAGE}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined || (m[2] === undefined && value.startsWith('--')))
      throw new UsageError(`--${m[1]} needs a value\n${USAGE}`);
    raw.set(m[1], value);
  }
  const known = new Set([
    'backend',
    'workers',
    'duration',
    'faults',
    'seed',
    'mode',
    'ttl',
    'wait',
    'signal-check',
    'report',
    'workload',
    'clock-rate',
  ]);
  for (const flag of raw.keys())
    if (!known.has(flag)) throw new UsageError(`unknown option --${flag}\n${USAGE}`);

  const backend = raw.get('backend');
  if (backend === undefined) throw new UsageError(`--backend is required\n${USAGE}`);
  if (!(BACKEND_NAMES as readonly string[]).includes(backend)) {
    throw new UsageError(
      `--backend: unknown backend "${backend}"; allowed: ${BACKEND_NAMES.join(', ')}`,
    );
  }
  if (!TORTURE_BACKENDS[backend as BackendName]) {
    throw new UsageError(
      `--backend: "${backend}" has not landed in this tree yet; available: ${Object.keys(TORTURE_BACKENDS).join(', ')}`,
    );
  }
  const faultText = raw.get('faults') ?? FAULTS.join(',');
  const faults = faultText === 'none' ? [] : faultText.split(',').map((f) => f.trim());
  for (const f of faults) {
    if (!(FAULTS as readonly string[]).includes(f))
      throw new UsageError(
        `--faults: unknown fault "${f}"; allowed: ${FAULTS.join(', ')} (comma-separated) or none`,
      );
  }
  const mode = raw.get('mode') ?? 'exclusive';
  if (mode !== 'exclusive' && mode !== 'shared')
    throw new UsageError(`--mode: got "${mode}"; allowed: exclusive, shared`);
  const signalCheck = raw.get('signal-check') ?? 'on';
  if (signalCheck !== 'on' && signalCheck !== 'off')
    throw new UsageError(`--signal-check: got "${signalCheck}"; allowed: on, off`);
  const workloadText = raw.get('workload') ?? WORKLOADS.join(',');
  const workloads = workloadText.split(',').map((w) => w.trim());
  for (const w of workloads) {
    if (!(WORKLOADS as readonly string[]).includes(w))
      throw new UsageError(
        `--workload: unknown workload "${w}"; allowed: ${WORKLOADS.join(', ')} (comma-separated)`,
      );
  }
  const clockRates = parseRates(raw.get('clock-rate'));
  const limits = TORTURE_BACKENDS[backend as BackendName]?.ttl ?? { default: 500, min: 100 };
  const ttl = raw.has('ttl') ? parseDuration('ttl', raw.get('ttl') as string) : limits.default;
  if (ttl < limits.min || (limits.step !== undefined && ttl % limits.step !== 0)) {
    throw new UsageError(
      `--ttl: got ${ttl} ms; allowed for ${backend}: at least ${limits.min} ms${limits.step ? `, a multiple of ${limits.step} ms` : ''}`,
    );
  }
  const options: TortureOptions = {
    backend: backend as BackendName,
    workers: parseInteger('workers', raw.get('workers') ?? '8', 2, 64),
    durationMs: parseDuration('duration', raw.get('duration') ?? '60s'),
    faults: [...new Set(faults as Fault[])],
    seed: parseInteger('seed', raw.get('seed') ?? String(Date.now() % 1_000_000), 0, 2 ** 31 - 1),
    mode,
    ttl,
    wait: parseDuration('wait', raw.get('wait') ?? '2s'),
    signalCheck: signalCheck === 'on',
    report: raw.get('report'),
    workloads: [...new Set(workloads as Workload[])],
    clockRates,
  };
  const minimum = minimumDuration(options);
  if (options.durationMs < minimum) {
    throw new UsageError(
      `--duration: got ${options.durationMs} ms; allowed: at least ${minimum} ms (faults need time, then 2 x ttl + wait of quiet for the liveness check)`,
    );
  }
  return options;
}

/** "0.99..1.05" (or one rate "0.9") -> [min, max], each in 0.5..2. */
function parseRates(text: string | undefined): [number, number] {
  if (text === undefined) return DEFAULT_CLOCK_RATES;
  const m = /^(\d+(?:\.\d+)?)(?:\.\.(\d+(?:\.\d+)?))?$/.exec(text.trim());
  const min = m ? Number(m[1]) : NaN;
  const max = m ? Number(m[2] ?? m[1]) : NaN;
  if (!(min >= 0.5 && max <= 2 && min <= max))
    throw new UsageError(
      `--clock-rate: got "${text}"; allowed: a rate or a range min..max within 0.5..2, e.g. 0.99..1.05`,
    );
  return [min, max];
}

/** Quiet tail after the nemesis stops: the liveness window plus a worker restart. */
export function quietMs(o: Pick<TortureOptions, 'ttl' | 'wait'>): number {
  return 2 * o.ttl + o.wait + 2_000;
}

export function minimumDuration(o: Pick<TortureOptions, 'ttl' | 'wait'>): number {
  return quietMs(o) + 3_000;
}
