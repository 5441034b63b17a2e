/**
 * The README is read in two places: on the repository's site, and inside node_modules, where only
 * the packed files exist. So its links to docs/ are absolute repository URLs (`<repository>/blob/
 * main/docs/...`); `npm run docs:check` maps such URLs back to the local file to check that it
 * and its anchor exist (repositoryPath), and refuses a relative README link to a file that
 * `npm pack` leaves out (checkPackedLinks).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/** Every Markdown link or image target of one line of prose (code spans removed). */
export function linkTargets(text: string): string[] {
  const withoutCode = text.replace(/`[^`]*`/g, '');
  return [...withoutCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1],
  );
}

/** `https://github.com/owner/name` from package.json's `repository`. */
function repositoryUrl(root: string): string {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    repository?: string | { url?: string };
  };
  const url = typeof pkg.repository === 'string' ? pkg.repository : (pkg.repository?.url ?? '');
  return url.replace(/^git\+/, '').replace(/\.git$/, '');
}

/**
 * The repository-relative path (with its #anchor) a URL of this repository's main branch names
 * (`<repository>/blob/main/docs/x.md#a` -> `docs/x.md#a`, `/tree/main/` for folders), else
 * undefined (another site, or no repository in package.json).
 */
export function repositoryPath(root: string, target: string): string | undefined {
  const repo = repositoryUrl(root);
  if (repo === '') return undefined;
  for (const kind of ['blob', 'tree']) {
    const prefix = `${repo}/${kind}/main/`;
    if (target.startsWith(prefix)) return target.slice(prefix.length);
  }
  return undefined;
}

/** The files `npm pack` puts in the tarball (no build: `--ignore-scripts`). */
function packedFiles(root: string): Set<string> {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [info] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ files: { path: string }[] }>;
  return new Set(info.files.map((f) => f.path));
}

/**
 * README.md's relative links must name packed files (LICENSE, CHANGELOG.md, ...): anything else
 * (docs/) points at nothing inside node_modules. Returns how many relative links it checked.
 */
export function checkPackedLinks(
  root: string,
  prose: Array<{ line: number; text: string }>,
  problems: string[],
): number {
  const packed = packedFiles(root);
  let count = 0;
  for (const { line, text } of prose) {
    for (const target of linkTargets(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
      count++;
      const [pathPart, anchor] = target.split('#', 2);
      const path = relative(root, resolve(root, decodeURIComponent(pathPart)));
      if (!packed.has(path))
        problems.push(
          `README.md:${line}: link to ${target}: not in the packed package, so nothing in ` +
            `node_modules; link to ${repositoryUrl(root)}/blob/main/${path}${anchor ? `#${anchor}` : ''} instead`,
        );
    }
  }
  return count;
}
