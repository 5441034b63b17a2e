import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HolderProcess } from './holder-harness';
import { eventually } from './eventually';

const SCRIPT = join(__dirname, 'fixtures', 'echo-holder.process.ts');

/** Process state letter from /proc (R running, S sleeping, T stopped, Z zombie). */
const stateOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0];

describe('holder harness (a child process speaking JSON over IPC)', () => {
  const started: HolderProcess[] = [];
  const start = (arg: string) => {
    const holder = HolderProcess.start(SCRIPT, [arg]);
    started.push(holder);
    return holder;
  };
  afterAll(async () => {
    await Promise.all(started.map((h) => h.kill()));
  });

  it('delivers messages in order and passes commands to the child', async () => {
    const holder = start('first');
    expect(await holder.next('ready')).toEqual({ type: 'ready', arg: 'first' });
    holder.send({ type: 'ping', n: 1 });
    holder.send({ type: 'ping', n: 2 });
    const first = await holder.next('pong');
    const second = await holder.next('pong', holder.messages.indexOf(first) + 1);
    expect([first.n, second.n]).toEqual([1, 2]);
  }, 60_000);

  it('SIGSTOP pauses the child, SIGCONT resumes it; kill() ends a stopped child', async () => {
    const holder = start('stoppable');
    await holder.next('ready');
    holder.stop();
    await eventually(() => stateOf(holder.pid) === 'T');
    holder.cont();
    await eventually(() => stateOf(holder.pid) !== 'T');
    holder.send({ type: 'ping', n: 7 });
    expect((await holder.next('pong')).n).toBe(7);
    holder.stop();
    await eventually(() => stateOf(holder.pid) === 'T');
    expect(await holder.kill()).toEqual({ code: null, signal: 'SIGKILL' });
  }, 60_000);

  it("rejects with the child's own reason when it reports an error", async () => {
    const holder = start('broken');
    await expect(holder.next('ready')).rejects.toThrow(/cannot hold: broken on purpose/);
    expect((await holder.exited).code).toBe(1);
  }, 60_000);

  it('rejects as soon as the child exits without the awaited message', async () => {
    const holder = start('quitter');
    await holder.next('ready');
    holder.send({ type: 'fail' });
    await expect(holder.next('pong')).rejects.toThrow(/holder exited \(code 3, signal null\)/);
  }, 60_000);
});
