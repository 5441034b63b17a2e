#!/usr/bin/env node
/**
 * The install test (`npm run test:install`, run by .ci/run): what a new user does, on the packed
 * tarball. Packs the package (prepack builds it), checks that the published package.json carries no
 * development scripts and that no published .d.ts imports an optional peer, then for each matrix row
 * makes a Nest app in a temp dir, installs the tarball (ioredis the only driver, @nestjs/terminus as
 * `npm i @nestjs/terminus` installs it) from the npm registry (through npm's cache) with a plain
 * `npm install` (no --legacy-peer-deps, no --force), writes the scratch app and compiles it strictly
 * (strict, skipLibCheck: false, module/moduleResolution nodenext). Then, on Node 24, 26, 22 and
 * this Node 20, it boots the app against a private redis-server and checks over HTTP: a @Locked
 * route answers 200, then 409 with Retry-After while another request holds the lock, then 200
 * again; every subpath of `exports` loads (/entries: the app imports a value and a type from each);
 * the package's bin (`npx nestjs-distributed-lock inspect`) shows the app's held lock and its
 * holder's pid; /health answers 200 through Terminus; finally the app calls app.close() and its
 * process must exit by itself.
 *
 * Rows: Nest 12 apps made by `nest new` itself, ES module (Vitest) and CommonJS (Jest), on the
 * starter's TypeScript; they are built with `npm run build`, linted with `npm run lint`,
 * type-checked also with typescript@latest, and run their own `npm test` and `npm run test:e2e`
 * with the testing guide's specs added. Nest 11 CommonJS apps with ioredis 6 and 5, assembled on
 * TypeScript 5.9 as Nest 11's starter had it, also compiled with classic node10 resolution (which
 * reads typesVersions).
 * Usage: node test/install/install-test.js [--rows nest12-esm,nest12-cjs,nest11-cjs,nest11-cjs-ioredis5]
 *        [--keep] (keep the temp dir). Every check runs even after a failure; exit 1 if any failed.
 */
'use strict';
const { execFileSync, spawn, spawnSync } = require('node:child_process');
const {
  existsSync,
  mkdtempSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} = require('node:fs');
const { createServer } = require('node:net');
const { request } = require('node:http');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');
const { appFiles, entriesController } = require('./scratch-app');

const root = join(__dirname, '..', '..');
/**
 * `starter`: the app is what `nest new --type <esm|cjs>` makes today (its TypeScript, tsconfig,
 * test runner and specs); the other rows are assembled here with TypeScript 5.9, as Nest 11's
 * starter had it.
 */
const ROWS = {
  'nest12-esm': { nest: '12', esm: true, ioredis: '6', starter: 'esm' },
  'nest12-cjs': { nest: '12', esm: false, ioredis: '6', starter: 'cjs' },
  'nest11-cjs': { nest: '11', esm: false, ioredis: '6', typesNode: '20' },
  'nest11-cjs-ioredis5': { nest: '11', esm: false, ioredis: '5', typesNode: '20' },
};
/** npm's settings for every install, `nest new`'s own included. */
const NPM_ENV = {
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_prefer_offline: 'true',
  npm_config_loglevel: 'error',
};
/** Each app boots on every Node we support: the pinned Node 24, 26 and 22, and this Node 20. */
const pinnedNode = (major) =>
  join(
    execFileSync('bash', [join(root, 'scripts/node.sh'), major], { encoding: 'utf8' }).trim(),
    'node',
  );
const RUNTIMES = [
  ['Node 24', pinnedNode('24')],
  ['Node 26', pinnedNode('26')],
  ['Node 22', pinnedNode('22')],
];
if (['22', '24', '26'].includes(process.versions.node.split('.')[0]))
  console.log(`note: on Node ${process.versions.node}, the apps boot on Node 24, 26 and 22 only`);
else RUNTIMES.push([`Node ${process.versions.node}`, process.execPath]);
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const PEER_NEST = manifest.peerDependencies['@nestjs/common'];
/** The subpaths of package.json `exports` ('./fencing', ...) with their files, package.json aside. */
const SUBPATHS = Object.entries(manifest.exports).filter(
  ([subpath, target]) => subpath !== '.' && typeof target === 'object',
);
const args = process.argv.slice(2);
const rowsArg = args.includes('--rows')
  ? args[args.indexOf('--rows') + 1]
  : Object.keys(ROWS).join(',');
const rows = rowsArg.split(',').map((name) => {
  if (!ROWS[name])
    throw new Error(`--rows: unknown row "${name}" (known: ${Object.keys(ROWS).join(', ')})`);
  return [name, ROWS[name]];
});
const keep = args.includes('--keep');

const results = [];
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
function check(row, what, ok, detail = '') {
  results.push({ row, what, ok, detail });
  console.log(
    `${ok ? 'ok  ' : 'FAIL'} [${row}] ${what}${detail ? `: ${detail}` : ''} (${elapsed()})`,
  );
}
/** Runs a command to its end: `out` is its stdout (with its stderr when it failed), `err` its stderr. */
function run(cmd, argv, cwd, extraEnv = {}) {
  const result = spawnSync(cmd, argv, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...NPM_ENV, ...extraEnv },
  });
  const ok = result.status === 0;
  const failure = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() || String(result.error);
  return { ok, out: ok ? result.stdout : failure, err: result.stderr ?? '' };
}

/** Runs a command to its end and checks that it succeeded (its output when it did not). */
function runCheck(name, what, cmd, argv, cwd) {
  const result = run(cmd, argv, cwd);
  check(name, what, result.ok, result.ok ? '' : result.out.slice(0, 3000));
  return result;
}

/** Runs the installed package's bin in `dir` with `node` first on PATH (its shebang's `node`). */
function cli(dir, node, argv) {
  const bin = join(dir, 'node_modules', '.bin', 'nestjs-distributed-lock');
  const env = { ...process.env, PATH: `${dirname(node)}:${process.env.PATH}`, LOCK_URL: '' };
  return new Promise((resolve, reject) => {
    const child = spawn(bin, argv, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Resolves with the child once `line` appears in its output; rejects if it exits first. */
function waitForOutput(child, pattern, what, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`${what}: no "${pattern}" within ${timeoutMs} ms:\n${seen}`)),
      timeoutMs,
    );
    const onData = (chunk) => {
      seen += chunk;
      if (pattern.test(seen)) {
        clearTimeout(timer);
        resolve(seen);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before "${pattern}":\n${seen}`));
    });
  });
}

function http(port, method, path) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function startRedis(dir) {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  await waitForOutput(child, /Ready to accept connections/, 'redis-server');
  return { port, stop: () => child.kill('SIGKILL') };
}

function pack(tmp) {
  const packed = run('npm', ['pack', '--json', '--pack-destination', tmp], root);
  if (!packed.ok) throw new Error(`npm pack failed:\n${packed.out}`);
  const info = JSON.parse(packed.out.slice(packed.out.indexOf('[')))[0];
  const files = info.files.map((f) => f.path);
  const has = (p) => files.some((f) => f === p || f.startsWith(p));
  const published = JSON.parse(
    execFileSync('tar', ['-xzOf', join(tmp, info.filename), 'package/package.json'], {
      encoding: 'utf8',
    }),
  );
  const scripts = Object.keys(published.scripts ?? {});
  check(
    'pack',
    'the published package.json has no scripts (no prepare, nothing npm warns about) and no devDependencies',
    scripts.length === 0 && published.devDependencies === undefined,
    scripts.join(', '),
  );
  check(
    'pack',
    'tarball lists dist/lib with .d.ts, LICENSE, CHANGELOG.md, README.md',
    has('dist/lib/index.d.ts') &&
      has('LICENSE') &&
      has('CHANGELOG.md') &&
      has('README.md') &&
      !files.some((f) => f.includes('.spec.')),
    `${info.entryCount} files, ${(info.size / 1024).toFixed(1)} kB packed, ${(info.unpackedSize / 1024).toFixed(1)} kB unpacked`,
  );
  const missing = SUBPATHS.flatMap(([, target]) => [target.types, target.default]).filter(
    (file) => !has(file.slice(2)),
  );
  check(
    'pack',
    `tarball has the .d.ts and .js of every subpath (${SUBPATHS.map(([s]) => s.slice(2)).join(', ')})`,
    missing.length === 0,
    missing.join(', '),
  );
  const unimported = SUBPATHS.map(([s]) => `${manifest.name}${s.slice(1)}`).filter(
    (name) => !entriesController.includes(`from '${name}'`),
  );
  check(
    'pack',
    'the scratch app imports every subpath (a value and a type)',
    unimported.length === 0,
    unimported.join(', '),
  );
  return join(tmp, info.filename);
}

/**
 * `nest new` makes the app and installs it; then the user writes the app's files and installs this
 * package with the driver and Terminus.
 */
function installStarter(name, row, tarball, tmp) {
  const dirName = `nest${row.nest}-${row.starter}`;
  const made = run(
    'npx',
    [
      '--yes',
      `@nestjs/cli@${row.nest}`,
      'new',
      `scratch-${dirName}`,
      ...['--directory', dirName, '--type', row.starter, '--package-manager', 'npm'],
      ...['--skip-git', '--no-observe', '--skip-skills', '--no-interactive'],
    ],
    tmp,
  );
  check(
    name,
    `nest new --type ${row.starter} (@nestjs/cli@${row.nest})`,
    made.ok,
    made.ok ? '' : made.out.slice(-2000),
  );
  if (!made.ok) return undefined;
  const dir = join(tmp, dirName);
  for (const [file, text] of Object.entries(appFiles(row))) writeFileSync(join(dir, file), text);
  const result = runCheck(
    name,
    'npm install tarball, ioredis, @nestjs/terminus',
    'npm',
    [
      'install',
      ...peerFlags(name, row),
      tarball,
      `ioredis@${row.ioredis}`,
      '@nestjs/terminus',
      '@types/redis-errors@1', // for tsconfig.strict.json's skipLibCheck: false (see below)
    ],
    dir,
  );
  return result.ok ? dir : undefined;
}

/** A Nest major our peer range does not claim can still be tried (to decide the range). */
function peerFlags(name, row) {
  const claimed = PEER_NEST.split('||').some((r) => r.trim().startsWith(`^${row.nest}.`));
  if (claimed) return [];
  console.log(
    `     [${name}] Nest ${row.nest} is outside the peer range ${PEER_NEST}: installing with --legacy-peer-deps`,
  );
  return ['--legacy-peer-deps'];
}

/** Installs the scratch app for a row; rows that differ only in ioredis share one dir (and its install). */
function install(name, row, tarball, tmp) {
  if (row.starter) return installStarter(name, row, tarball, tmp);
  const dir = join(tmp, `nest${row.nest}-${row.esm ? 'esm' : 'cjs'}`);
  const fresh = !existsSync(dir);
  const deps = fresh
    ? [
        tarball,
        `@nestjs/common@${row.nest}`,
        `@nestjs/core@${row.nest}`,
        `@nestjs/platform-express@${row.nest}`,
        '@nestjs/terminus', // what `npm i @nestjs/terminus` installs next to the app's Nest
        'reflect-metadata@0.2',
        'rxjs@7',
        `ioredis@${row.ioredis}`,
        // ioredis 6.1's .d.ts imports redis-errors, which has no types of its own: without these,
        // skipLibCheck: false fails in ioredis (docs/guide/troubleshooting.md), not in ours.
        '@types/redis-errors@1',
        'typescript@5.9',
        `@types/node@${row.typesNode}`,
        '@types/express@5',
      ]
    : [`ioredis@${row.ioredis}`];
  if (fresh) {
    mkdirSync(join(dir, 'src'), { recursive: true });
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify(
        {
          name: `scratch-nest${row.nest}`,
          private: true,
          version: '0.0.0',
          ...(row.esm ? { type: 'module' } : {}),
        },
        null,
        2,
      ),
    );
    for (const [file, text] of Object.entries(appFiles(row))) writeFileSync(join(dir, file), text);
  }
  const result = run('npm', ['install', ...peerFlags(name, row), ...deps], dir);
  check(
    name,
    `npm install ${fresh ? 'tarball, Nest, ioredis, typescript 5.9' : `ioredis@${row.ioredis}`}`,
    result.ok,
    result.ok ? '' : result.out.slice(0, 2000),
  );
  return result.ok ? dir : undefined;
}

async function runRow(name, row, tarball, tmp) {
  const dir = install(name, row, tarball, tmp);
  if (!dir) return;
  const runner = { esm: 'vitest', cjs: 'jest' }[row.starter];
  const versions = ['@nestjs/core', '@nestjs/terminus', 'ioredis', 'typescript', runner]
    .filter(Boolean)
    .map(
      (p) =>
        `${p} ${JSON.parse(readFileSync(join(dir, 'node_modules', p, 'package.json'), 'utf8')).version}`,
    )
    .join(', ');
  console.log(`     [${name}] installed ${versions}`);

  const peers = run(
    process.execPath,
    [
      join(root, 'scripts', 'check-published-types.js'),
      join(dir, 'node_modules', 'nestjs-distributed-lock', 'dist'),
    ],
    root,
  );
  check(name, 'no published .d.ts imports an optional peer', peers.ok, peers.ok ? '' : peers.out);
  const tscBin = join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  if (row.starter) {
    compileStarter(name, dir, tscBin);
  } else {
    // tsc emits even when it reports errors, so the boot below still runs and reports on its own.
    runCheck(
      name,
      `tsc (Nest starter, ${row.esm ? 'ES module' : 'CommonJS'}: strict, skipLibCheck false, nodenext)`,
      process.execPath,
      [tscBin, '-p', 'tsconfig.json'],
      dir,
    );
  }
  // Classic resolution ignores `exports`: the root's and every subpath's types must resolve
  // through main/types/typesVersions. Libraries were fully checked above; this pass checks
  // resolution. TypeScript 6 (the starters') refuses node10 as deprecated, so older apps only.
  // The package's own resolution does not depend on the row: check it once.
  if (
    !row.esm &&
    !row.starter &&
    !results.some((r) => r.what.startsWith('tsc (moduleResolution node10'))
  ) {
    runCheck(
      name,
      'tsc (moduleResolution node10: types and typesVersions resolve)',
      process.execPath,
      [tscBin, '-p', 'tsconfig.node10.json'],
      dir,
    );
  }

  for (const [runtime, node] of RUNTIMES) {
    if (runner) await starterSpecs(`${name}, ${runtime}`, dir, node, runner);
    await boot(`${name}, ${runtime}`, dir, node);
  }
}

/**
 * Builds a `nest new` app as its own scripts do, then checks it more strictly than the starter:
 * its tsconfig with the libraries' .d.ts checked (specs included), with its TypeScript and with
 * npm's latest major.
 */
function compileStarter(name, dir, tscBin) {
  runCheck(name, 'npm run build (nest build)', 'npm', ['run', 'build'], dir);
  runCheck(
    name,
    "npm run lint (the starter's oxlint, type-aware: the app and the guide's specs)",
    'npm',
    ['run', 'lint'],
    dir,
  );
  const strict = ['-p', 'tsconfig.strict.json'];
  runCheck(
    name,
    "tsc: the starter's tsconfig (strict, src and specs) with skipLibCheck false",
    process.execPath,
    [tscBin, ...strict],
    dir,
  );
  const latest = ['--yes', '-p', 'typescript@latest', 'tsc'];
  const version = run('npx', [...latest, '--version'], dir).out.trim();
  runCheck(
    name,
    `the same with typescript@latest (${version})`,
    'npx',
    [...latest, ...strict],
    dir,
  );
}

/**
 * Runs the app's own `npm test` and `npm run test:e2e` on `node` (first on PATH, for npm and the
 * scripts): the starter's specs, its e2e spec booting AppModule on a private redis-server, and the
 * specs of docs/guide/testing.md. Jest loads Nest 12 (ES modules) only on Node >= 24.9 (the
 * starter's own spec fails alike on older Node), so a Jest app runs them there only.
 */
async function starterSpecs(name, dir, node, runner) {
  const [major, minor] = run(node, ['-p', 'process.versions.node'], dir).out.split('.').map(Number);
  if (runner === 'jest' && (major < 24 || (major === 24 && minor < 9))) {
    console.log(
      `     [${name}] Jest loads Nest 12 on Node >= 24.9 only: the app's specs run on Node 24 and 26`,
    );
    return;
  }
  const redis = await startRedis(dir);
  try {
    const env = {
      PATH: `${dirname(node)}:${process.env.PATH}`,
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
    };
    for (const script of ['test', 'test:e2e']) {
      const result = run('npm', ['run', script], dir, env);
      const passed = /Tests:?\s+(\d+) passed/.exec(stripAnsi(`${result.out}${result.err}`));
      check(
        name,
        `npm run ${script} (${runner}${script === 'test' ? ": the starter's and the testing guide's specs" : ': AppModule on Redis'})`,
        result.ok,
        result.ok ? `${passed?.[1] ?? '?'} passed` : result.out.slice(-3000),
      );
    }
  } finally {
    redis.stop();
  }
}

function stripAnsi(text) {
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

/** Boots the built app on `node` and checks it over HTTP. */
async function boot(name, dir, node) {
  const redis = await startRedis(dir);
  const appPort = await freePort();
  const redisUrl = `redis://127.0.0.1:${redis.port}`;
  const app = spawn(node, ['dist/main.js'], {
    cwd: dir,
    env: { ...process.env, PORT: String(appPort), REDIS_URL: redisUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  app.stdout.setEncoding('utf8');
  app.stderr.setEncoding('utf8');
  let output = '';
  app.stdout.on('data', (c) => (output += c));
  app.stderr.on('data', (c) => (output += c));
  const exited = new Promise((resolve) =>
    app.once('exit', (code, signal) => resolve({ code, signal })),
  );
  try {
    await waitForOutput(app, /listening on/, 'scratch app');
    const first = await http(appPort, 'GET', '/orders/42/pay');
    check(name, '@Locked route answers 200', first.status === 200, `${first.status} ${first.body}`);
    const holding = http(appPort, 'GET', '/orders/42/hold');
    const entered = await http(appPort, 'GET', '/orders/42/entered'); // answers once /hold runs under the lock
    const busy = await http(appPort, 'GET', '/orders/42/pay');
    check(
      name,
      '409 with Retry-After while another request holds the lock',
      entered.status === 200 && busy.status === 409 && busy.headers['retry-after'] !== undefined,
      `${busy.status} retry-after=${busy.headers['retry-after']} ${busy.body}`,
    );
    // The package's bin, as `npx nestjs-distributed-lock` runs it (its shebang's `node` is this
    // runtime): it sees the app's lock and its holder, the app's process.
    const bin = await cli(dir, node, ['inspect', 'order:42', '--json', '--url', redisUrl]);
    const view = bin.code === 0 ? JSON.parse(bin.stdout) : undefined;
    const shown = view?.held === true && view.holders?.[0]?.pid === app.pid;
    check(
      name,
      'the bin (npx nestjs-distributed-lock inspect) shows the held lock and its holder',
      shown,
      shown ? '' : `exit ${bin.code} ${bin.stdout.slice(0, 300)} ${bin.stderr.slice(0, 300)}`,
    );
    const released = await http(appPort, 'GET', '/orders/42/release');
    const held = await holding;
    const again = await http(appPort, 'GET', '/orders/42/pay');
    check(
      name,
      '200 again after the holder finished',
      released.status === 200 && held.status === 200 && again.status === 200,
      `${held.status}, ${again.status}`,
    );
    const entries = await http(appPort, 'GET', '/entries');
    const expected = {
      fencing: 'function',
      testing: 'function',
      operations: true,
      integration: 'function',
      backendKit: 'function',
    };
    check(
      name,
      'every subpath loads at run time (/entries)',
      entries.status === 200 &&
        JSON.stringify(JSON.parse(entries.body)) === JSON.stringify(expected),
      `${entries.status} ${entries.body.slice(0, 300)}`,
    );
    const health = await http(appPort, 'GET', '/health');
    check(
      name,
      '/health through @nestjs/terminus answers 200 (locks up)',
      health.status === 200 && /"locks":\{"status":"up"/.test(health.body),
      `${health.status} ${health.body.slice(0, 300)}`,
    );
    await http(appPort, 'GET', '/shutdown'); // the app answers, then calls app.close()
    const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), 15_000).unref());
    const exit = await Promise.race([exited, timeout]);
    check(
      name,
      'app.close(), then the process exits by itself (no process.exit)',
      exit !== 'timeout' && exit.code === 0,
      exit === 'timeout'
        ? `still running 15 s after app.close():\n${output.slice(-1500)}`
        : `exit code ${exit.code}`,
    );
  } catch (error) {
    check(name, 'boot and HTTP checks', false, `${error.message}\n${output.slice(-2000)}`);
  } finally {
    if (app.exitCode === null && app.signalCode === null) app.kill('SIGKILL');
    redis.stop();
  }
}

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'ndl-install-'));
  try {
    const tarball = pack(tmp);
    for (const [name, row] of rows) await runRow(name, row, tarball, tmp);
  } catch (error) {
    check('setup', 'install test', false, error.stack);
  } finally {
    if (keep) console.log(`kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
  const failed = results.filter((r) => !r.ok);
  console.log(
    `\ninstall test: ${results.length - failed.length} passed, ${failed.length} failed, ${elapsed()}`,
  );
  process.exitCode = failed.length > 0 ? 1 : 0;
}

void main();
