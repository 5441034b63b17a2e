import type { LockHolderIdentity } from '../interfaces/lock-backend.interface';

/** Longest holder data a backend stores (characters); an instance name is cut to fit. */
export const MAX_HOLDER_DATA = 256;

const encoded = new WeakMap<LockHolderIdentity, string>();

/**
 * The holder as the text a backend stores with a grant: compact JSON `{"host","pid","instance"}`,
 * made once per identity (the engine passes the same object on every attempt), so storing it costs
 * no more than the bytes. '' without an identity.
 */
export function holderData(holder: LockHolderIdentity | undefined): string {
  if (!holder) return '';
  let text = encoded.get(holder);
  if (text === undefined) {
    text = JSON.stringify({ host: holder.host, pid: holder.pid, instance: holder.instance });
    if (text.length > MAX_HOLDER_DATA)
      text = JSON.stringify({
        host: holder.host.slice(0, 64),
        pid: holder.pid,
        instance: holder.instance.slice(0, 128),
      });
    encoded.set(holder, text);
  }
  return text;
}

/**
 * A holder's metadata for inspect() from what the grant stored: `host`, `pid` and `instance` when
 * holderData() wrote it; `data` when another client did (Curator stores an IP address, kazoo an
 * identifier); undefined when nothing was stored.
 */
export function holderMetadata(
  stored: string | Buffer | null | undefined,
): Readonly<Record<string, string>> | undefined {
  const text = Buffer.isBuffer(stored) ? stored.toString('utf8') : stored;
  if (!text) return undefined;
  if (text.startsWith('{"host":')) {
    try {
      const h = JSON.parse(text) as Partial<Record<keyof LockHolderIdentity, unknown>>;
      if (typeof h.host === 'string' && typeof h.pid === 'number')
        return { host: h.host, pid: String(h.pid), instance: String(h.instance ?? '') };
    } catch {
      // not ours after all: shown as data
    }
  }
  return { data: text.slice(0, MAX_HOLDER_DATA) };
}
