#!/usr/bin/env node
/**
 * A test lane on another Nest major: a copy of the working tree in .tmp/lanes/<lane>/ whose
 * package.json takes the versions of test/lanes/<lane>.versions.json and whose package-lock.json is
 * test/lanes/<lane>.package-lock.json (so every version in the lane is pinned, as on main). The copy
 * leaves this tree's node_modules alone; npm ci runs in the copy whenever its lockfile changed.
 *
 *   node scripts/lane.js nest11 -- npm run test:compat   run a command in the lane
 *   node scripts/lane.js nest11 --lock                    re-pin the lane after package.json changed
 */
'use strict';
const { execFileSync } = require('node:child_process');
const {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} = require('node:fs');
const { dirname, join } = require('node:path');

const root = join(__dirname, '..');
const [lane, ...rest] = process.argv.slice(2);
const versionsFile = join(root, 'test/lanes', `${lane}.versions.json`);
if (!lane || !existsSync(versionsFile)) {
  console.error(
    'usage: node scripts/lane.js <lane> (--lock | -- <command...>); lanes: test/lanes/',
  );
  process.exit(2);
}
const lockFile = join(root, 'test/lanes', `${lane}.package-lock.json`);
const dir = join(root, '.tmp/lanes', lane);
const sh = (cmd, args, cwd, stdio = 'inherit') =>
  execFileSync(cmd, args, { cwd, stdio, encoding: 'utf8' });

// The tree as git sees it (tracked and untracked-not-ignored files), copied fresh into the lane.
for (const entry of existsSync(dir) ? require('node:fs').readdirSync(dir) : []) {
  if (entry !== 'node_modules') rmSync(join(dir, entry), { recursive: true, force: true });
}
const files = sh('git', ['ls-files', '-co', '--exclude-standard', '-z'], root, 'pipe')
  .split('\0')
  .filter((f) => f && existsSync(join(root, f)));
for (const file of files) {
  mkdirSync(dirname(join(dir, file)), { recursive: true });
  copyFileSync(join(root, file), join(dir, file));
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const [name, version] of Object.entries(JSON.parse(readFileSync(versionsFile, 'utf8')))) {
  if (!(name in pkg.devDependencies))
    throw new Error(`${versionsFile}: ${name} is no devDependency`);
  pkg.devDependencies[name] = version;
}
writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);

if (rest[0] === '--lock') {
  // Keep what the lane pinned before where it still satisfies package.json.
  if (existsSync(lockFile)) copyFileSync(lockFile, join(dir, 'package-lock.json'));
  sh('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], dir);
  copyFileSync(join(dir, 'package-lock.json'), lockFile);
  console.log(`lane ${lane}: pinned in ${lockFile}`);
  process.exit(0);
}
if (rest[0] !== '--' || rest.length < 2) {
  console.error('usage: node scripts/lane.js <lane> (--lock | -- <command...>)');
  process.exit(2);
}
copyFileSync(lockFile, join(dir, 'package-lock.json'));
const stamp = join(dir, 'node_modules/.lane-lock');
const lock = readFileSync(lockFile, 'utf8');
if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== lock) {
  sh('npm', ['ci', '--no-audit', '--no-fund'], dir);
  writeFileSync(stamp, lock);
}
console.log(`lane ${lane}: ${rest.slice(1).join(' ')} (in ${dir})`);
try {
  sh(rest[1], rest.slice(2), dir);
} catch (error) {
  process.exit(typeof error.status === 'number' ? error.status : 1);
}
