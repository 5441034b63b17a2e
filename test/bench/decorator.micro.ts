/**
 * Micro-bench (run by hand; speed is never asserted): what @Locked adds to a provider method call,
 * in process, without HTTP. A Nest application context with DistributedLockModule on memory; the
 * same method with and without @Locked (a new key per call, like scenario 3's route), called back
 * to back. CPU µs per call from process.cpuUsage, CYCLES calls per round, ROUNDS rounds, plain and
 * locked interleaved in a shuffled order; median. The difference is the decorator + engine cycle.
 *
 * LIB_BASE=<a tsc build of another commit>/dist/lib adds that build's plain and locked, interleaved.
 *
 * Usage: npx ts-node --transpile-only test/bench/decorator.micro.ts [cycles=20000] [rounds=5]
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import * as thisLib from '../../lib';

type Library = typeof thisLib;
type Call = (id: string) => Promise<unknown>;

/** A Nest application context over `lib`, and its plain and @Locked method. */
async function contextOf(
  lib: Library,
): Promise<{ plain: Call; locked: Call; close(): Promise<void> }> {
  @Injectable()
  class Work {
    async plain(id: string) {
      return { id };
    }

    @lib.Locked('item:<id>')
    async locked(id: string) {
      return { id };
    }
  }

  @Module({
    imports: [lib.DistributedLockModule.forRoot({ backend: new lib.MemoryLockBackend() })],
    providers: [Work],
  })
  class BenchModule {}

  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  const work = app.get(Work);
  return {
    plain: (id) => work.plain(id),
    locked: (id) => work.locked(id),
    close: () => app.close(),
  };
}

async function round(fn: (id: string) => Promise<unknown>, n: number): Promise<number> {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn(`k${i}`);
  const used = process.cpuUsage(t);
  return (used.user + used.system) / n;
}

async function main(): Promise<void> {
  const cycles = Number(process.argv[2] ?? 20_000);
  const rounds = Number(process.argv[3] ?? 5);
  const libraries: Record<string, Library> = { this: thisLib };
  if (process.env.LIB_BASE) libraries.base = require(process.env.LIB_BASE) as Library;
  const routes: Record<string, Call> = {};
  const contexts = [];
  for (const [name, lib] of Object.entries(libraries)) {
    const ctx = await contextOf(lib);
    contexts.push(ctx);
    routes[`${name} plain`] = ctx.plain;
    routes[`${name} locked`] = ctx.locked;
  }
  const results: Record<string, number[]> = Object.fromEntries(
    Object.keys(routes).map((k) => [k, []]),
  );
  for (const name of Object.keys(routes)) await round(routes[name], cycles / 4);
  for (let r = 0; r < rounds; r++)
    for (const name of Object.keys(routes).sort(() => Math.random() - 0.5))
      results[name].push(await round(routes[name], cycles));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`@Locked on memory, in process: ${cycles} calls x ${rounds} rounds, CPU µs per call`);
  for (const name of Object.keys(routes))
    console.log(
      `  ${name.padEnd(12)} ${median(results[name]).toFixed(2).padStart(7)}   ${results[name].map((x) => x.toFixed(1)).join(' ')}`,
    );
  for (const name of Object.keys(libraries))
    console.log(
      `  ${`${name} added`.padEnd(12)} ${(median(results[`${name} locked`]) - median(results[`${name} plain`])).toFixed(2).padStart(7)}`,
    );
  for (const ctx of contexts) await ctx.close();
}

void main();
