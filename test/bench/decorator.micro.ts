/**
 * Micro-bench (run by hand; speed is never asserted): what @Locked adds to a provider method call,
 * in process, without HTTP. A Nest application context with DistributedLockModule on memory; the
 * same method with and without @Locked (a new key per call, like scenario 3's route), called back
 * to back. CPU µs per call from process.cpuUsage, CYCLES calls per round, ROUNDS rounds, plain and
 * locked interleaved in a shuffled order; median. The difference is the decorator + engine cycle.
 *
 * Usage: npx ts-node --transpile-only test/bench/decorator.micro.ts [cycles=20000] [rounds=5]
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DistributedLockModule, Locked, MemoryLockBackend } from '../../lib';

@Injectable()
class Work {
  async plain(id: string) {
    return { id };
  }

  @Locked('item:<id>')
  async locked(id: string) {
    return { id };
  }
}

@Module({
  imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() })],
  providers: [Work],
})
class BenchModule {}

async function round(fn: (id: string) => Promise<unknown>, n: number): Promise<number> {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn(`k${i}`);
  const used = process.cpuUsage(t);
  return (used.user + used.system) / n;
}

async function main(): Promise<void> {
  const cycles = Number(process.argv[2] ?? 20_000);
  const rounds = Number(process.argv[3] ?? 5);
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  const work = app.get(Work);
  const routes: Record<string, (id: string) => Promise<unknown>> = {
    plain: (id) => work.plain(id),
    locked: (id) => work.locked(id),
  };
  const results: Record<string, number[]> = { plain: [], locked: [] };
  for (const name of Object.keys(routes)) await round(routes[name], cycles / 4);
  for (let r = 0; r < rounds; r++)
    for (const name of Object.keys(routes).sort(() => Math.random() - 0.5))
      results[name].push(await round(routes[name], cycles));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`@Locked on memory, in process: ${cycles} calls x ${rounds} rounds, CPU µs per call`);
  for (const name of Object.keys(routes))
    console.log(
      `  ${name.padEnd(7)} ${median(results[name]).toFixed(2).padStart(7)}   ${results[name].map((x) => x.toFixed(1)).join(' ')}`,
    );
  console.log(
    `  added   ${(median(results.locked) - median(results.plain)).toFixed(2).padStart(7)}`,
  );
  await app.close();
}

void main();
