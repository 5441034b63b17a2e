import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { transpiledEnv, transpiledScript } from '../support/transpiled';

/**
 * The clock nemesis's wrapper, in a child process (it replaces the process's clocks and timers):
 * performance.now and Date.now advance at the rate, stay continuous and monotonic across a change,
 * and timers are stretched by 1 / rate.
 */
describe('clock rate wrapper', () => {
  it('runs the clocks at the rate and stretches timers', () => {
    const script = `
      const { installClockRate } = require(${JSON.stringify(transpiledScript(join(__dirname, 'clock-rate.ts')))});
      const realNow = performance.now.bind(performance);
      const clock = installClockRate();
      const out = {};
      let v0 = performance.now(), r0 = realNow();
      clock.setRate(0.5);
      const v1 = performance.now();
      out.continuous = v1 - v0 >= 0 && v1 - v0 < 50;
      v0 = performance.now(); r0 = realNow();
      const d0 = Date.now();
      setTimeout(() => {
        const real = realNow() - r0;
        const virt = performance.now() - v0;
        out.ratio = virt / real;
        out.dateAdvance = Date.now() - d0;
        out.real = real;
        clock.setRate(2);
        const v2 = performance.now();
        out.monotonic = v2 >= v0 + virt;
        console.log(JSON.stringify(out));
      }, 100);
    `;
    const out = JSON.parse(
      execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', env: transpiledEnv() }),
    ) as {
      continuous: boolean;
      ratio: number;
      dateAdvance: number;
      real: number;
      monotonic: boolean;
    };
    expect(out.continuous).toBe(true);
    expect(out.monotonic).toBe(true);
    // Exact by construction (both reads are the same function of the real clock).
    expect(out.ratio).toBeCloseTo(0.5, 2);
    // setTimeout(100) at rate 0.5 waits at least 200 real ms (100 ms on the slow clock).
    expect(out.real).toBeGreaterThanOrEqual(199);
    expect(out.dateAdvance).toBeGreaterThanOrEqual(99);
  });
});
