import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../support/server-process';
import { transpiledEnv, transpiledScript } from '../support/transpiled';

/**
 * Terminus health answers carried the driver's error text (`connect ECONNREFUSED
 * 127.0.0.1:5999`) on MySQL and PostgreSQL: a health answer often reaches a public endpoint.
 * Down is reported with a generic reason; the address and the driver's words stay out. The
 * probe runs in a child process (see health-probe.process.ts).
 */
describe('health answers carry no driver error text', () => {
  it.each(['mysql', 'postgres'])(
    '%s: down, without the address or the driver text',
    async (kind) => {
      const port = await freePort(); // nothing listens there: every connect is refused
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [transpiledScript(join(__dirname, 'health-probe.process.ts')), kind, String(port)],
        { timeout: 30_000, env: transpiledEnv() },
      );
      const result = JSON.parse(stdout.trim()) as {
        locks: { status: string; message: string };
      };
      expect(result.locks.status).toBe('down');
      expect(result.locks.message).toMatch(/^default \(\w+\): /);
      expect(stdout).not.toMatch(/ECONNREFUSED/);
      expect(stdout).not.toContain('127.0.0.1');
      expect(stdout).not.toContain(String(port));
    },
  );
});
