/**
 * ioredis 5.x and 6.0 (not 6.1) end a Sentinel client for good when its failover detector hears
 * `+switch-master` while the client is reconnecting: the detector closes the connector while the
 * connector asks a sentinel for the new primary, that connect then fails ("Connection is
 * closed."), and the client goes from `connecting` to `end` with no retry. A failover that
 * killed the primary makes exactly that likely (the client reconnects in a loop while Sentinel
 * promotes the replica), and a client that ended answers nothing until the process restarts.
 *
 * reconnectAfterSentinelRace(client) connects such a client again. Only that case: a client with
 * `failoverDetector` and both retry strategies (it was asked to keep reconnecting), which went
 * from `connecting` to `end` without anyone closing it (`disconnect()` and `quit()` set ioredis's
 * `manuallyClosing` first). Once per client, however many backends and stores share it.
 */
interface SentinelClient {
  readonly status?: string;
  readonly options?: {
    sentinels?: unknown;
    failoverDetector?: boolean;
    retryStrategy?: unknown;
    sentinelRetryStrategy?: unknown;
  };
  readonly manuallyClosing?: boolean;
  on(event: string, cb: () => void): unknown;
  connect(): Promise<unknown>;
}

/** ms before the new connection attempt, as ioredis's first retry. */
const RETRY_MS = 50;
const watched = new WeakSet<object>();

export function reconnectAfterSentinelRace(client: unknown): void {
  const c = client as SentinelClient;
  const o = c?.options;
  if (!o?.sentinels || o.failoverDetector !== true || typeof c.on !== 'function') return;
  if (typeof o.retryStrategy !== 'function' || typeof o.sentinelRetryStrategy !== 'function')
    return;
  if (watched.has(c)) return;
  watched.add(c);
  let connecting = false;
  c.on('connecting', () => (connecting = true));
  for (const settled of ['connect', 'ready', 'close', 'reconnecting'])
    c.on(settled, () => (connecting = false));
  c.on('end', () => {
    if (!connecting || c.manuallyClosing === true) return;
    connecting = false;
    const timer = setTimeout(() => {
      if (c.status === 'end' && c.manuallyClosing !== true) c.connect().catch(() => undefined);
    }, RETRY_MS);
    timer.unref?.();
  });
}
