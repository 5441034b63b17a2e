#!/usr/bin/env node
/**
 * Published .d.ts files must never import an optional peer dependency: a user who installed only
 * ioredis and compiles with `skipLibCheck: false` would get TS2307 for etcd3, pg, ... The optional
 * peers are read from package.json (peerDependenciesMeta: optional). Usage:
 *   node scripts/check-published-types.js [dir]      (default: dist; exit 1 listing offenders)
 */
'use strict';
const { readdirSync, readFileSync, statSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const dir = process.argv[2] ?? join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const optional = Object.entries(pkg.peerDependenciesMeta ?? {})
  .filter(([, meta]) => meta && meta.optional)
  .map(([name]) => name);

const walk = (d) =>
  readdirSync(d).flatMap((name) => {
    const p = join(d, name);
    return statSync(p).isDirectory() ? walk(p) : name.endsWith('.d.ts') ? [p] : [];
  });

/** Module specifiers a declaration file refers to: import/export from, import('x'), reference types. */
function specifiers(src) {
  const found = [];
  const patterns = [
    /\bfrom\s+['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\/\/\/\s*<reference\s+types\s*=\s*['"]([^'"]+)['"]/g,
    /^\s*import\s+['"]([^'"]+)['"]/gm,
  ];
  for (const re of patterns) for (const m of src.matchAll(re)) found.push(m[1]);
  return found;
}

const isPeer = (spec) =>
  optional.find(
    (peer) => spec === peer || spec.startsWith(`${peer}/`) || spec === `@types/${peer}`,
  );

const offenders = [];
for (const file of walk(dir)) {
  const peers = [...new Set(specifiers(readFileSync(file, 'utf8')).map(isPeer).filter(Boolean))];
  if (peers.length > 0) offenders.push(`${relative(dir, file)}: imports ${peers.join(', ')}`);
}
if (offenders.length > 0) {
  console.error(`Published .d.ts files import optional peers (${optional.join(', ')}):`);
  for (const o of offenders) console.error(`  ${o}`);
  console.error(
    'Type the driver structurally instead (a small local interface), as the Redis backend does.',
  );
  process.exit(1);
}
console.log(
  `ok: no .d.ts under ${relative(root, dir) || dir} imports an optional peer (${optional.join(', ')})`,
);
