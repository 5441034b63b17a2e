#!/usr/bin/env node
/**
 * Makes sure the server programs the tests start privately are installed: redis-server,
 * redis-sentinel, etcd + etcdctl, ZooKeeper and Curator jars, mariadbd, PostgreSQL's initdb/postgres,
 * a JDK (javac) for the Curator interop program, python3-kazoo for the kazoo interop tests, and chromium for the live view's browser test.
 * Missing ones are installed with apt-get when we are
 * root on Debian/Ubuntu; otherwise it fails naming the packages to install. Never starts or touches
 * the machine's own services. `node scripts/ensure-servers.js component` checks only what the
 * component tier needs (chromium); without an argument, everything.
 */
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, readdirSync } = require('node:fs');

const onPath = (cmd) =>
  spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const postgresBin = () => {
  try {
    return readdirSync('/usr/lib/postgresql').some((v) =>
      existsSync(`/usr/lib/postgresql/${v}/bin/initdb`),
    );
  } catch {
    return false;
  }
};

// Debian's python3-kazoo installs for Debian's own interpreter, which a pyenv/venv python3 on PATH may hide.
const debianPython = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

const needs = [
  {
    what: 'redis-server',
    ok: () => onPath('redis-server') && onPath('redis-cli'),
    pkg: ['redis-server', 'redis-tools'],
  },
  { what: 'redis-sentinel', ok: () => onPath('redis-sentinel'), pkg: ['redis-sentinel'] },
  { what: 'etcd', ok: () => onPath('etcd'), pkg: ['etcd-server'] },
  { what: 'etcdctl', ok: () => onPath('etcdctl'), pkg: ['etcd-client'] },
  {
    what: 'ZooKeeper jars',
    ok: () => existsSync('/usr/share/java/zookeeper.jar'),
    pkg: ['zookeeper'],
  },
  {
    what: 'Curator recipes jars',
    ok: () => existsSync('/usr/share/java/curator-recipes.jar'),
    pkg: ['libcurator-recipes-java'],
  },
  {
    what: 'slf4j-nop',
    ok: () => existsSync('/usr/share/java/slf4j-nop.jar'),
    pkg: ['libslf4j-java'],
  },
  {
    what: 'java + javac',
    ok: () => onPath('java') && onPath('javac'),
    pkg: ['default-jdk-headless'],
  },
  {
    what: 'python3-kazoo (the kazoo lock/election interop tests)',
    ok: () =>
      spawnSync(debianPython, ['-c', 'import kazoo.recipe.lock'], { stdio: 'ignore' }).status === 0,
    pkg: ['python3-kazoo'],
  },
  {
    what: 'mariadbd',
    ok: () => onPath('mariadbd') || existsSync('/usr/sbin/mariadbd'),
    pkg: ['mariadb-server'],
  },
  { what: 'PostgreSQL server (initdb)', ok: postgresBin, pkg: ['postgresql'] },
  {
    what: 'chromium (the live view is tested in a real headless browser)',
    ok: () => existsSync('/usr/bin/chromium'),
    pkg: ['chromium'],
    tier: 'component',
  },
  {
    what: 'setpriv + ps (the PostgreSQL harness runs postgres as its own user)',
    ok: () => onPath('setpriv') && onPath('ps'),
    pkg: ['util-linux', 'procps'],
  },
];

const tier = process.argv[2];
const missing = needs.filter((n) => (tier === undefined || n.tier === tier) && !n.ok());
if (missing.length === 0) process.exit(0);
const pkgs = [...new Set(missing.flatMap((n) => n.pkg))];
console.log(
  `ensure-servers: missing ${missing.map((n) => n.what).join(', ')}; packages: ${pkgs.join(' ')}`,
);
const root = typeof process.getuid === 'function' && process.getuid() === 0;
if (!root || !onPath('apt-get')) {
  console.error(
    `ensure-servers: cannot install them here (need root and apt-get). Install: sudo apt-get install -y ${pkgs.join(' ')}`,
  );
  process.exit(1);
}
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
execFileSync('apt-get', ['update', '-q'], { stdio: 'inherit', env });
// --no-install-recommends keeps it small; policy-rc.d-style: Debian may try to start services, which we neither need nor use.
execFileSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...pkgs], {
  stdio: 'inherit',
  env,
});
const still = missing.filter((n) => !n.ok());
if (still.length) {
  console.error(
    `ensure-servers: still missing after apt-get: ${still.map((n) => n.what).join(', ')}`,
  );
  process.exit(1);
}
