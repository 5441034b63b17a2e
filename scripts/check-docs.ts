/**
 * Docs that cannot rot (`npm run docs:check`, run by .ci/run):
 * 1. every ```ts block of README.md and docs/**\/*.md is type-checked, strictly, as its own module
 *    against the package (the package name and each subpath of package.json `exports`, e.g.
 *    'nestjs-distributed-lock/fencing', map to their entry files in lib/ through `paths`). A block preceded by `<!-- snippet: partial -->` is skipped (a
 *    fragment on purpose); one preceded by `<!-- snippet: pending REASON -->` is checked but its
 *    errors only warn (code that lands with another change; the check says when it compiles);
 * 2. every relative link and #anchor resolves: the file exists, and the anchor is a heading of the
 *    target Markdown file (GitHub's slugs); so does every link to this repository's main branch
 *    (`<repository>/blob/main/docs/x.md#a`, checked as docs/x.md#a). README.md's relative links
 *    name only files `npm pack` ships (scripts/package-links.ts): it is read in node_modules too;
 * 3. the docs speak to users (scripts/docs-hygiene.ts): no commit hash, "round N", issue reference
 *    or dated run in README.md or docs/, none of the first three in lib/'s comments, and no image
 *    under docs/ that no doc links;
 * 4. the run of record's tables in docs/benchmarks.md are what `npm run bench -- --report` makes.
 * Exit 1 listing every problem as file:line.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';
import { checkImages, checkLibComments, checkMarkdown } from './docs-hygiene';
import { checkPackedLinks, linkTargets, repositoryPath } from './package-links';
import { markdownFiles } from './markdown-files';

const root = resolve(__dirname, '..');
const problems: string[] = [];
const warnings: string[] = [];

interface Snippet {
  file: string; // markdown file, relative to root
  line: number; // 1-based line of the first code line
  code: string;
  marker: 'check' | 'partial' | 'pending';
}

/** Splits a Markdown file into fenced code blocks (with their marker) and the prose lines outside them. */
function scan(file: string): {
  snippets: Snippet[];
  prose: Array<{ line: number; text: string }>;
  headings: string[];
} {
  const lines = readFileSync(file, 'utf8').split('\n');
  const rel = relative(root, file);
  const snippets: Snippet[] = [];
  const prose: Array<{ line: number; text: string }> = [];
  const headings: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(```+|~~~+)\s*([\w-]*)/.exec(lines[i]);
    if (!open) {
      prose.push({ line: i + 1, text: lines[i] });
      const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(lines[i]);
      if (heading) headings.push(heading[1]);
      continue;
    }
    const fence = open[2];
    const lang = open[3].toLowerCase();
    let j = i + 1;
    while (j < lines.length && !lines[j].trimStart().startsWith(fence)) j++;
    if (lang === 'ts' || lang === 'typescript') {
      let k = i - 1;
      while (k >= 0 && lines[k].trim() === '') k--;
      const markerLine = k >= 0 ? lines[k].trim() : '';
      const marker = /^<!--\s*snippet:\s*partial\b/.test(markerLine)
        ? 'partial'
        : /^<!--\s*snippet:\s*pending\b/.test(markerLine)
          ? 'pending'
          : 'check';
      snippets.push({ file: rel, line: i + 2, code: lines.slice(i + 1, j).join('\n'), marker });
    }
    i = j;
  }
  return { snippets, prose, headings };
}

/** GitHub's heading anchors: lower case, punctuation dropped, each space a hyphen, duplicates -1, -2. */
function anchorsOf(headings: string[]): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings) {
    const text = h.replace(/<[^>]+>/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function checkLinks(files: string[], scans: Map<string, ReturnType<typeof scan>>): number {
  let count = 0;
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (file: string): Set<string> => {
    let set = anchorCache.get(file);
    if (!set) {
      set = anchorsOf((scans.get(file) ?? scan(file)).headings);
      anchorCache.set(file, set);
    }
    return set;
  };
  for (const file of files) {
    for (const { line, text } of scans.get(file)!.prose) {
      for (const target of linkTargets(text)) {
        // A URL of this repository's main branch is checked as the local file it names.
        const inRepository = repositoryPath(root, target);
        if (inRepository === undefined && /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, mailto:
        count++;
        const [pathPart, anchor] = (inRepository ?? target).split('#', 2);
        const where = `${relative(root, file)}:${line}`;
        const base = inRepository === undefined ? dirname(file) : root;
        const targetFile = pathPart === '' ? file : resolve(base, decodeURIComponent(pathPart));
        if (!existsSync(targetFile)) {
          problems.push(
            `${where}: link to ${target}: no such file (${relative(root, targetFile)})`,
          );
          continue;
        }
        if (anchor !== undefined && anchor !== '') {
          if (!targetFile.endsWith('.md')) {
            problems.push(
              `${where}: link to ${target}: anchors are checked only in Markdown files`,
            );
          } else if (!anchors(targetFile).has(decodeURIComponent(anchor))) {
            problems.push(
              `${where}: link to ${target}: no heading with anchor #${anchor} in ${relative(root, targetFile)}`,
            );
          }
        }
      }
    }
  }
  return count;
}

/**
 * `paths` for the package name and every subpath package.json `exports` publishes: the entry's
 * `types` (`./dist/lib/x/index.d.ts`) read as its source (`lib/x/index.ts`), so a snippet can
 * import exactly what a user can, and nothing else.
 */
function entryPaths(): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { types?: string }>;
  };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const types = typeof target === 'string' ? undefined : target.types;
    if (!types) continue; // ./package.json
    const source = types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts');
    paths[`${pkg.name}${subpath.slice(1)}`] = [source];
  }
  return paths;
}

function checkSnippets(snippets: Snippet[]): void {
  const dir = join(root, '.tmp', 'docs-check');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const byFile = new Map<string, Snippet>();
  snippets.forEach((s, i) => {
    const name = join(dir, `snippet-${String(i).padStart(3, '0')}.ts`);
    const isModule = /^\s*(import|export)\s/m.test(s.code);
    writeFileSync(name, `${s.code}\n${isModule ? '' : 'export {};\n'}`);
    byFile.set(name, s);
  });
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    lib: ['lib.es2022.d.ts'],
    strict: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node', 'jest'],
    typeRoots: [join(root, 'node_modules', '@types')],
    baseUrl: root,
    paths: entryPaths(),
  };
  const program = ts.createProgram([...byFile.keys()], options);
  const host: ts.FormatDiagnosticsHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => root,
    getNewLine: () => '\n',
  };
  const failedPending = new Set<Snippet>();
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const snippet = d.file ? byFile.get(resolve(d.file.fileName)) : undefined;
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!snippet) {
      // An error outside the snippets (lib/ itself, or the options): the check cannot be trusted.
      problems.push(
        `${d.file ? relative(root, d.file.fileName) : 'tsconfig'}: TS${d.code}: ${text}`,
      );
      continue;
    }
    const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
    const message = `${snippet.file}:${snippet.line + line}: TS${d.code}: ${text}`;
    if (snippet.marker === 'pending') {
      failedPending.add(snippet);
      warnings.push(`${message} (pending snippet: not an error yet)`);
    } else problems.push(message);
  }
  for (const s of snippets.filter((x) => x.marker === 'pending' && !failedPending.has(x))) {
    warnings.push(
      `${s.file}:${s.line}: pending snippet compiles now: remove its <!-- snippet: pending --> marker`,
    );
  }
  void host;
  rmSync(dir, { recursive: true, force: true });
}

/** The record block of docs/benchmarks.md and its charts are current (generated, never typed). */
async function checkRecord(): Promise<void> {
  const { staleParts } = await import('../test/bench/bench.record');
  for (const part of await staleParts())
    problems.push(
      `${part}: the run of record's output is stale: run \`npm run bench -- --report\``,
    );
}

async function main(): Promise<void> {
  const files = markdownFiles(root);
  const scans = new Map(files.map((f) => [f, scan(f)] as const));
  const all = [...scans.values()].flatMap((s) => s.snippets);
  const checked = all.filter((s) => s.marker !== 'partial');
  checkSnippets(checked);
  const links = checkLinks(files, scans);
  const packedLinks = checkPackedLinks(root, scans.get(join(root, 'README.md'))!.prose, problems);
  checkMarkdown(root, files, problems);
  const libFiles = checkLibComments(root, problems);
  const images = checkImages(root, files, problems);
  await checkRecord();
  const partial = all.filter((s) => s.marker === 'partial');
  for (const w of warnings) console.warn(`warning: ${w}`);
  for (const p of problems) console.error(p);
  console.log(
    `docs:check: ${files.length} Markdown files, ${checked.length} TypeScript blocks type-checked` +
      ` (${checked.filter((s) => s.marker === 'pending').length} pending), ${partial.length} skipped as partial` +
      `${partial.length ? ` (${partial.map((s) => `${s.file}:${s.line}`).join(', ')})` : ''}, ${links} links checked` +
      ` (${packedLinks} relative ones of README.md against the packed files):` +
      ` ${images} images under docs/, comments of ${libFiles} lib files: ${problems.length} problem(s)`,
  );
  process.exitCode = problems.length > 0 ? 1 : 0;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
