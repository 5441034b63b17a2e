#!/usr/bin/env node
/**
 * `npm run lint`: runs every check, even after one fails, then prints one line per check and exits
 * non-zero if any failed. The rules live in the tools' own config: eslint.config.mjs (house rules:
 * import boundaries, no driver loaded by lib/, no focused tests, file size), .prettierrc, the
 * tsconfig, and madge for import cycles.
 */
'use strict';
const { spawnSync } = require('node:child_process');

const checks = [
  ['eslint', 'lint:eslint'],
  ['prettier', 'lint:format'],
  ['tsc', 'typecheck'],
  ['madge (cycles)', 'lint:cycles'],
];

const results = checks.map(([name, script]) => {
  console.log(`\n> ${name}: npm run ${script}`);
  const run = spawnSync('npm', ['run', '--silent', script], { stdio: 'inherit' });
  return { name, ok: run.status === 0 };
});

console.log('\nlint summary:');
for (const r of results) console.log(`  ${r.ok ? 'pass' : 'FAIL'}  ${r.name}`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
