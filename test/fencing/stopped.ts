import { readdirSync, readFileSync } from 'node:fs';

/**
 * Resolves once every thread of a paused server is stopped: SIGSTOP is delivered asynchronously,
 * so a request sent right after `pause()` may still be answered.
 */
export async function stopped(server: { child?: { pid?: number } }): Promise<void> {
  const pid = server.child?.pid as number;
  const state = (tid: string) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
    } catch {
      return 'T'; // the thread has exited
    }
  };
  while (!readdirSync(`/proc/${pid}/task`).every((tid) => state(tid) === 'T'))
    await new Promise((resolve) => setImmediate(resolve));
}
