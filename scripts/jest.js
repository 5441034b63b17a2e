#!/usr/bin/env node
/**
 * Runs Jest with what the installed Nest needs. Nest 12 is ESM-only: our specs stay CommonJS (ts-jest)
 * and load it through require(esm), which Jest supports only in its ESM mode
 * (--experimental-vm-modules) and only on Node >= 24.9: on an older Node, the run moves to the
 * pinned Node 24 of scripts/node.sh 24 (installed from the npm registry on first use). Nest 11 runs
 * in plain CommonJS mode on any supported Node. Arguments pass through to Jest:
 * `node scripts/jest.js --selectProjects unit`.
 */
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const nest = JSON.parse(readFileSync(join(root, 'node_modules/@nestjs/core/package.json'), 'utf8'));
const esmNest = nest.type === 'module';
const env = { ...process.env };
let node = process.execPath;
if (esmNest) {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 24 || (major === 24 && minor < 9)) {
    try {
      const bin = execFileSync('bash', [join(root, 'scripts/node.sh'), '24'], { encoding: 'utf8' });
      node = join(bin.trim(), 'node');
      env.PATH = `${bin.trim()}:${env.PATH}`;
    } catch {
      console.error(
        `jest: @nestjs/core ${nest.version} is ESM-only, and Jest loads it only on Node >= 24.9 ` +
          `(this is ${process.version}), and scripts/node.sh 24 could not install Node 24 here. ` +
          'Run with Node 24, or run the Nest 11 lane: node scripts/lane.js nest11 -- npm test.',
      );
      process.exit(2);
    }
    console.log(`jest: Nest ${nest.version} is ESM-only: running on ${node} (Node 24)`);
  }
  env.NODE_OPTIONS = [
    env.NODE_OPTIONS,
    '--experimental-vm-modules',
    '--disable-warning=ExperimentalWarning',
  ]
    .filter(Boolean)
    .join(' ');
}
const jest = join(root, 'node_modules/jest/bin/jest.js');
const result = spawnSync(node, [jest, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env,
});
process.exit(result.status ?? 1);
