/**
 * Two test tiers, as Jest projects over the same specs:
 * - `unit` (`npm run test:unit`): every spec that starts no server. It runs in seconds on any
 *   machine: the engine, option checking, key templates, the memory conformance suite, the module,
 *   the sample app e2e, the torture checker...
 * - `integration` (`npm run test:integration`): every spec that starts a server (Redis, etcd,
 *   ZooKeeper, MariaDB, PostgreSQL) through a harness of test/support/, directly or through a
 *   helper.
 * `npm test` runs both. The split is computed, not listed: a spec is `integration` when it imports,
 * directly or through other files under test/ (static or lazy `import()`), one of SERVER_HARNESSES;
 * so a new spec lands in the right tier without editing this file. The check over-approximates (a
 * spec that imports a harness module but starts nothing is `integration`): list such specs in
 * UNIT_ALTHOUGH_IMPORTED.
 */
const { readFileSync, readdirSync, existsSync, statSync } = require('node:fs');
const { dirname, join, relative, resolve } = require('node:path');

const root = __dirname;
const SERVER_HARNESSES = new Set(
  [
    'redis-server',
    'redis-sentinel',
    'etcd-server',
    'zookeeper-server',
    'mariadb-server',
    'postgres-server',
  ].map((name) => join(root, 'test/support', `${name}.ts`)),
);
const testDir = join(root, 'test');
/** Specs that reach a harness module only to read a table from it (they start nothing). */
const UNIT_ALTHOUGH_IMPORTED = new Set(
  ['test/torture/torture-options.spec.ts'].map((file) => join(root, file)), // backend names
);

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (name === 'node_modules' || name.startsWith('.')) return [];
    return statSync(p).isDirectory() ? walk(p) : [p];
  });

/** The file a relative import names (TypeScript's resolution for our layout), or undefined. */
function resolveImport(from, spec) {
  const base = resolve(dirname(from), spec);
  return [base, `${base}.ts`, `${base}.js`, join(base, 'index.ts')].find(
    (p) => existsSync(p) && statSync(p).isFile(),
  );
}

const IMPORTS = /(?:from\s+|import\s*\(\s*|require\s*\(\s*|import\s+)['"](\.[^'"]*)['"]/g;
const importsOf = new Map();
/** The files under test/ that `file` imports (relative imports only). */
function localImports(file) {
  if (!importsOf.has(file)) {
    const src = readFileSync(file, 'utf8');
    const targets = [...src.matchAll(IMPORTS)].map(([, spec]) => resolveImport(file, spec));
    importsOf.set(
      file,
      targets.filter((t) => t !== undefined && t.startsWith(testDir + '/')),
    );
  }
  return importsOf.get(file);
}

/** True when `file` reaches a server harness through relative imports (lib/ never does). */
function reachesServer(file, seen = new Set()) {
  if (SERVER_HARNESSES.has(file)) return true;
  if (seen.has(file)) return false;
  seen.add(file);
  return localImports(file).some((target) => reachesServer(target, seen));
}

const specs = ['lib', 'test']
  .flatMap((dir) => walk(join(root, dir)))
  .filter((f) => f.endsWith('.spec.ts'));
const asMatch = (files) => files.map((f) => `<rootDir>/${relative(root, f)}`);
const integration = specs.filter((f) => !UNIT_ALTHOUGH_IMPORTED.has(f) && reachesServer(f));
const unit = specs.filter((f) => !integration.includes(f));

const project = (displayName, files) => ({
  displayName,
  testEnvironment: 'node',
  rootDir: root,
  roots: ['<rootDir>/lib', '<rootDir>/test'],
  testMatch: asMatch(files),
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
});

module.exports = {
  projects: [project('unit', unit), project('integration', integration)],
  testTimeout: 60000,
  // Servers started by a spec are stopped in its afterAll; this catches a leaked handle instead of
  // hanging CI.
  forceExit: true,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
