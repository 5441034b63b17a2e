#!/usr/bin/env node
/**
 * The published package.json carries what a user's install needs and nothing of our development:
 * `prepack` runs `strip` (package.json without scripts and devDependencies, the original kept in
 * .package.json.dev), `postpack` runs `restore`. A pack that failed between the two leaves the
 * copy; the next `strip` or `restore` puts the original back first.
 */
'use strict';
const { existsSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const manifest = join(root, 'package.json');
const kept = join(root, '.package.json.dev');
const restore = () => existsSync(kept) && renameSync(kept, manifest);

const step = process.argv[2];
if (step === 'restore') {
  restore();
} else if (step === 'strip') {
  restore();
  const text = readFileSync(manifest, 'utf8');
  writeFileSync(kept, text);
  const { scripts: _scripts, devDependencies: _dev, ...published } = JSON.parse(text);
  writeFileSync(manifest, `${JSON.stringify(published, null, 2)}\n`);
} else {
  console.error('usage: node scripts/pack-manifest.js strip|restore');
  process.exit(2);
}
