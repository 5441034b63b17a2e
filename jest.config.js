/**
 * Three test tiers, as Jest projects over the same specs:
 * - `unit` (`npm run test:unit`): pure logic, in seconds: the lib specs and every test spec that
 *   reaches no server, no child process, no browser, no socket and no conformance suite (the
 *   engine, option checking, key templates, the module without HTTP, the torture checker...).
 * - `component` (`npm run test:component`): specs that need no server program but run real
 *   machinery: the conformance suite over the memory and example backends, the sample app e2e and
 *   every Nest app driven over HTTP (supertest), the live view in Chromium, the toy server, the
 *   holder-process harness and the TCP proxy.
 * - `integration` (`npm run test:integration`): every spec that starts a server (Redis, etcd,
 *   ZooKeeper, MariaDB, PostgreSQL) through a harness of test/support/, directly or through a
 *   helper.
 * `npm test` runs all three. The split is computed, not listed: the specs' relative imports are
 * followed through test/ and sample-app/ (static, `require` or lazy `import()`; `import type` loads
 * nothing and is not followed); a spec is `integration` when it reaches one of SERVER_HARNESSES,
 * else `component` when it reaches one of COMPONENT_FILES or imports one of COMPONENT_MODULES, else
 * `unit`. So a new spec lands in the right tier without editing this file. The check
 * over-approximates (a spec that imports a harness module only to read a table from it, or a
 * class whose socket it never opens): list such specs in UNIT_ALTHOUGH_IMPORTED.
 */
const { readFileSync, readdirSync, existsSync, statSync } = require('node:fs');
const { dirname, join, relative, resolve } = require('node:path');

const root = __dirname;
const inRepo = (files) => new Set(files.map((file) => join(root, file)));
const SERVER_HARNESSES = inRepo(
  [
    'redis-server',
    'redis-sentinel',
    'redis-cluster',
    'etcd-server',
    'zookeeper-server',
    'mariadb-server',
    'postgres-server',
  ].map((name) => `test/support/${name}.ts`),
);
/** Local files that make a spec `component`: the conformance suite. */
const COMPONENT_FILES = inRepo(['test/conformance/lock-conformance.ts']);
/** Packages whose import makes a spec `component`: processes, sockets, HTTP, a browser. */
const COMPONENT_MODULES = new Set(
  ['child_process', 'net', 'http', 'https', 'http2', 'dgram', 'worker_threads', 'cluster']
    .flatMap((name) => [name, `node:${name}`])
    .concat(['supertest', 'playwright-core', 'ws']),
);
/** Specs that import a harness or a socket module but start nothing (reason beside each). */
const UNIT_ALTHOUGH_IMPORTED = inRepo([
  'test/torture/torture-options.spec.ts', // reads the backend names of torture.backends
  'test/torture/history.checker.spec.ts', // drives FencedStore in-process; never listens
  'test/torture/fenced-store.spec.ts', // FencedStore on the memory fence only; never listens
]);
const followed = [join(root, 'test'), join(root, 'sample-app')].map((dir) => dir + '/');

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

const TYPE_ONLY = /^\s*(?:import|export)\s+type\s[^;]*?from\s*['"][^'"]*['"]/gm;
const IMPORTS =
  /(?:from\s+|import\s*\(\s*|require\s*\(\s*|jest\.mock\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;
const importsOf = new Map();
/** What `file` loads: `local` files under test/ or sample-app/, and bare `modules`. */
function importsOfFile(file) {
  if (!importsOf.has(file)) {
    const src = readFileSync(file, 'utf8').replace(TYPE_ONLY, '');
    const specs = [...src.matchAll(IMPORTS)].map(([, spec]) => spec);
    const local = specs
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => resolveImport(file, spec))
      .filter((t) => t !== undefined && followed.some((dir) => t.startsWith(dir)));
    importsOf.set(file, { local, modules: specs.filter((spec) => !spec.startsWith('.')) });
  }
  return importsOf.get(file);
}

/** True when `file` reaches, through relative imports, a file that satisfies `hit`. */
function reaches(file, hit, seen = new Set()) {
  if (hit(file)) return true;
  if (seen.has(file)) return false;
  seen.add(file);
  return importsOfFile(file).local.some((target) => reaches(target, hit, seen));
}
const startsServer = (file) => SERVER_HARNESSES.has(file);
const runsMachinery = (file) =>
  COMPONENT_FILES.has(file) || importsOfFile(file).modules.some((m) => COMPONENT_MODULES.has(m));

const specs = ['lib', 'test']
  .flatMap((dir) => walk(join(root, dir)))
  .filter((f) => f.endsWith('.spec.ts'));
const tierOf = (spec) => {
  if (UNIT_ALTHOUGH_IMPORTED.has(spec)) return 'unit';
  if (reaches(spec, startsServer)) return 'integration';
  return reaches(spec, runsMachinery) ? 'component' : 'unit';
};
const tiers = { unit: [], component: [], integration: [] };
for (const spec of specs) tiers[tierOf(spec)].push(spec);

/**
 * The compatibility lane (`JEST_LANE=compat`, Node 20 + Nest 11: `npm run test:compat`) runs every
 * unit and component spec, and of the integration tier only the specs that load Nest (they reach a
 * file, in lib/ too, that imports `@nestjs/*`). A backend spec that loads no Nest runs the same code
 * on both Nest majors; the main lane (Node 24 + Nest 12) runs it, and Node 20 still runs it in the
 * install test's apps. This keeps both lanes of CI under 40 minutes.
 */
const everywhere = [...followed, join(root, 'lib') + '/'];
const loadsNest = (file, seen = new Set()) => {
  if (seen.has(file)) return false;
  seen.add(file);
  const src = readFileSync(file, 'utf8').replace(TYPE_ONLY, '');
  if ([...src.matchAll(IMPORTS)].some(([, spec]) => spec.startsWith('@nestjs/'))) return true;
  // A process file a spec forks (`join(__dirname, 'leader.process.ts')`) counts as an import.
  const forked = [...src.matchAll(/['"]([\w.-]+\.process\.ts)['"]/g)].map(([, f]) => `./${f}`);
  return [...src.matchAll(IMPORTS)]
    .map(([, spec]) => spec)
    .concat(forked)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => resolveImport(file, spec))
    .some((t) => t !== undefined && everywhere.some((d) => t.startsWith(d)) && loadsNest(t, seen));
};
if (process.env.JEST_LANE === 'compat')
  tiers.integration = tiers.integration.filter((s) => loadsNest(s));
for (const tier of Object.keys(tiers)) {
  tiers[tier] = tiers[tier].map((spec) => `<rootDir>/${relative(root, spec)}`);
}

const project = (displayName) => ({
  displayName,
  testEnvironment: 'node',
  rootDir: root,
  roots: ['<rootDir>/lib', '<rootDir>/test'],
  testMatch: tiers[displayName],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
});

// Every tier closes what it opens and runs without forceExit: on 2 cores Jest runs in band, so a
// timer or socket a spec leaves behind keeps the process alive. The summary reporter then names
// it (with the stack that made each timer) and ends the process 60 s after the run with the
// run's own status, so a leak is reported, not turned into a CI timeout.
module.exports = {
  projects: [project('unit'), project('component'), project('integration')],
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
