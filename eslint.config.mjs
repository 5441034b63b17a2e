// @ts-check
/**
 * ESLint 9 (flat config) + typescript-eslint. Besides the recommended rules this file states the
 * house rules of docs/STYLE (they were regexes in scripts/lint.js):
 * - no focused or skipped tests anywhere (CI must run them all);
 * - lib/ never loads a driver at runtime (ioredis, etcd3, node-zookeeper-client, mysql2, pg are
 *   optional peers: `import type` only, never `require`), and prints nothing;
 * - import boundaries: a backend imports only lib/backend-kit, lib/interfaces, lib/errors, its own
 *   folder and the shared folder it uses (sql/ for MySQL and PostgreSQL, redis-client/ for Redis
 *   and Redlock); nothing imports across backend folders; lib/core never imports @nestjs/* or a
 *   backend; the kit imports only interfaces and errors; the example backend in test/ imports only
 *   the kit, as a third party would;
 * - files in lib/ stay small (a warning past 300 lines).
 * Import cycles are checked by madge (`npm run lint:cycles`), formatting by Prettier.
 */
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const DRIVERS = ['ioredis', 'etcd3', 'node-zookeeper-client', 'mysql2', 'mysql2/promise', 'pg'];
const driverPaths = DRIVERS.map((name) => ({
  name,
  allowTypeImports: true,
  message: 'Drivers are optional peers: lib/ may only `import type` them (STYLE.md).',
}));

/** The engine's import rule for `files`: no driver, no NestJS, and not what `forbidden` names. */
function engineBoundary(name, files, forbidden) {
  const patterns = [{ group: ['@nestjs/*'], message: 'lib/core is the engine: no NestJS.' }];
  return {
    name,
    files,
    ignores: libSpecs,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: driverPaths, patterns: [...patterns, forbidden] },
      ],
    },
  };
}

/** Folders under lib/backends/ that other backends may share, and who shares them. */
const SHARED = { sql: ['mysql', 'postgres'], 'redis-client': ['redis', 'redlock'] };
const BACKENDS = ['etcd', 'memory', 'mysql', 'postgres', 'redis', 'redlock', 'zookeeper'];

/** `../` repeated `n` times, as a regex source. */
const up = (n) => '(?:\\.\\./){' + n + '}';

/**
 * The imports a file `depth` folders below lib/backends/<name>/ may not make: any relative path
 * other than its own folder, `lib/{backend-kit,interfaces,errors}` and its shared folders; and
 * nothing from @nestjs (a backend is plain TypeScript).
 */
function backendBoundary(name, depth) {
  const shared = Object.keys(SHARED).filter((s) => SHARED[s].includes(name));
  const toLib = up(depth + 2);
  const allowed = [
    '\\./', // own folder, same level
    ...(depth > 0 ? [`(?:\\.\\./){1,${depth}}(?!\\.\\./)`] : []), // own folder, from a subfolder
    `${toLib}(?:backend-kit|interfaces|errors)(?:/|$)`,
    ...shared.map((s) => `${up(depth + 1)}${s}(?:/|$)`),
  ];
  return [
    {
      regex: `^(?!${allowed.join('|')})\\.`,
      message:
        'A backend imports only lib/backend-kit, lib/interfaces, lib/errors, its own folder and ' +
        `its shared folder (${Object.keys(SHARED).join(', ')}): ` +
        'never core, the Nest layer or another backend.',
    },
    { group: ['@nestjs/*'], message: 'A backend does not depend on NestJS.' },
  ];
}

const FOCUSED = ['describe', 'it', 'test'].flatMap((object) =>
  ['only', 'skip'].map((property) => ({
    object,
    property,
    message: 'No focused or skipped tests: CI runs them all (assert a missing capability instead).',
  })),
);
const FOCUSED_GLOBALS = ['fit', 'fdescribe', 'xit', 'xdescribe', 'xtest'].map((name) => ({
  name,
  message: 'No focused or skipped tests: CI runs them all.',
}));

const libSource = ['lib/**/*.ts'];
const libSpecs = ['lib/**/*.spec.ts'];

/** One config object per backend folder and depth (flat config replaces a rule's options). */
const backendConfigs = [...BACKENDS, ...Object.keys(SHARED)].flatMap((name) =>
  [0, 1, 2].map((depth) => ({
    name: `house/boundaries/backends/${name}/depth-${depth}`,
    files: [`lib/backends/${name}/${'*/'.repeat(depth)}*.ts`],
    ignores: libSpecs,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: driverPaths, patterns: backendBoundary(name, depth) },
      ],
    },
  })),
);

export default defineConfig(
  {
    name: 'house/ignores',
    ignores: ['dist/**', 'coverage/**', 'node_modules/**', '.tmp/**', 'test/bench/results/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    name: 'house/everywhere',
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
    },
    rules: {
      'no-restricted-properties': ['error', ...FOCUSED],
      'no-restricted-globals': ['error', ...FOCUSED_GLOBALS],
      // `tsc` already reports undefined names, with the real lib and @types.
      'no-undef': 'off',
      // Key checks reject control characters on purpose (/[\x00-\x1f]/).
      'no-control-regex': 'off',
      // `(...args: any[]) => R` is how a user callback type accepts any typed parameters.
      '@typescript-eslint/no-explicit-any': ['error', { ignoreRestArgs: true }],
      // Only lib/ must never `require` (drivers are optional peers); tests, benches and the
      // sample app load drivers and workers lazily on purpose.
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    name: 'house/commonjs-scripts',
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
  },
  {
    name: 'house/lib',
    files: libSource,
    ignores: libSpecs,
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-require-imports': 'error',
      '@typescript-eslint/no-restricted-imports': ['error', { paths: driverPaths }],
      // House rules: small files and functions (comments and blank lines count toward neither).
      'max-lines': ['error', { max: 300, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
      // Comments within the print width (Prettier wraps code, not comments).
      'max-len': ['error', { code: 1000, comments: 100, ignoreUrls: true }],
    },
  },
  engineBoundary('house/boundaries/core', ['lib/core/**/*.ts'], {
    regex: '^(?:\\.\\./)+backends(?:/|$)',
    message: 'lib/core never imports a backend (backends depend on the kit, not the reverse).',
  }),
  engineBoundary(
    'house/boundaries/pipeline',
    ['lib/core/acquire/**/*.ts', 'lib/core/lease/**/*.ts', 'lib/core/activity/**/*.ts'],
    {
      regex: '^(?:\\.\\./)+(?:backends|recipes)(?:/|$)',
      message: 'The pipeline knows no backend and no recipe: recipes build on it (lib/recipes/).',
    },
  ),
  {
    name: 'house/boundaries/backend-kit',
    files: ['lib/backend-kit/**/*.ts'],
    ignores: libSpecs,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: driverPaths,
          patterns: [
            {
              regex: '^(?!\\./|\\.\\./(?:interfaces|errors)(?:/|$))\\.',
              message: 'The published kit imports only lib/interfaces and lib/errors.',
            },
            { group: ['@nestjs/*'], message: 'The backend kit does not depend on NestJS.' },
          ],
        },
      ],
    },
  },
  ...backendConfigs,
  {
    // Decorators and filters wrap arbitrary user methods and classes: `Function` and `any` are
    // their subject matter (Nest's own decorator types use them too). Tests build such methods.
    name: 'house/metaprogramming',
    files: [
      'lib/decorators/**/*.ts',
      'lib/filters/**/*.ts',
      'lib/core/keys/lock-key.ts',
      'lib/core/keys/parameter-names.ts',
      'lib/core/engine-registry.ts',
      'test/**/*.ts',
    ],
    rules: {
      '@typescript-eslint/no-unsafe-function-type': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Optional Nest peers (microservices, websockets, graphql, event-emitter) and
    // @opentelemetry/api are loaded lazily, only when the application installed them; drivers
    // stay forbidden everywhere in lib/ (no-restricted-imports above).
    name: 'house/optional-peers',
    files: ['lib/filters/optional-peers.ts', 'lib/observability/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    name: 'house/example-backend',
    files: ['test/example-backend/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\./|(?:\\.\\./){2}lib/backend-kit$)\\.',
              message:
                'The example backend imports only the kit ' +
                "('nestjs-distributed-lock/backend-kit'), as a third party would.",
            },
          ],
        },
      ],
    },
  },
);
