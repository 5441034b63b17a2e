#!/usr/bin/env node
/**
 * Project rules that a type checker cannot see (run with `npm run lint`, which also type-checks):
 * - no focused or skipped tests anywhere (CI must run them all);
 * - lib/ never loads a driver at runtime: ioredis, etcd3, node-zookeeper-client, mysql2 and pg
 *   may appear only in `import type` (they are optional peer dependencies);
 * - no console output from lib/;
 * - files in lib/ stay small (STYLE.md: about 300 lines).
 */
'use strict';
const { readdirSync, readFileSync, statSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) return [];
    return statSync(p).isDirectory() ? walk(p) : /\.(ts|js)$/.test(name) ? [p] : [];
  });

const problems = [];
const DRIVERS = /(?:^|\n)\s*import\s+(?!type\b)[^;]*from\s+['"](ioredis|etcd3|node-zookeeper-client|mysql2(?:\/promise)?|pg)['"]|(?<![\w'"(])require\(\s*['"](ioredis|etcd3|node-zookeeper-client|mysql2(?:\/promise)?|pg)['"]\s*\)/;
for (const dir of ['lib', 'test', 'sample-app']) {
  let files = [];
  try {
    files = walk(join(root, dir));
  } catch {
    continue;
  }
  for (const file of files) {
    const rel = relative(root, file);
    const src = readFileSync(file, 'utf8');
    if (/\b(?:it|test|describe)\.(?:only|skip)\(|\bx(?:it|describe|test)\(|\bf(?:it|describe)\(/.test(src)) problems.push(`${rel}: focused or skipped test`);
    if (dir !== 'lib' || /\.spec\.ts$/.test(file)) continue;
    if (DRIVERS.test(src)) problems.push(`${rel}: loads a driver at runtime (use import type; drivers are optional peers)`);
    if (/\bconsole\.(log|info|warn|error)\(/.test(src)) problems.push(`${rel}: console output in the library`);
    const lines = src.split('\n').length;
    if (lines > 330) problems.push(`${rel}: ${lines} lines (split it: STYLE.md asks for ~300 at most)`);
  }
}
if (problems.length) {
  console.error(problems.map((p) => `lint: ${p}`).join('\n'));
  process.exit(1);
}
console.log('lint: ok');
