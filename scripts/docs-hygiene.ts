/**
 * The lab-notebook rules of `npm run docs:check`: docs/, README.md and the comments of lib/ speak
 * to users, so they name no commit hash, no development "round N", no issue or pull request and no
 * dated run; and every image under docs/ is linked from some doc (nothing left behind).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

interface Rule {
  what: string;
  pattern: RegExp;
}

/** A short (7–12) or full (40) lowercase hex string with a letter and a digit: a commit hash. */
const HASH: Rule = {
  what: 'a commit hash',
  pattern: /(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)(?:[0-9a-f]{7,12}|[0-9a-f]{40})(?![\w-])/,
};
const ROUND: Rule = { what: 'a development round', pattern: /\brounds?[ -]?\d+\b/i };
const ISSUE: Rule = {
  what: 'an issue reference',
  pattern: /\b(?:issues?|PRs?|pull requests?)\s*#?\d+|(?:^|[\s([,;])#\d+\b/i,
};
const DATE: Rule = { what: 'a dated run', pattern: /\b20\d\d-[01]\d-[0-3]\d\b/ };
/** A measured time or speed-up in a code comment: results belong to docs/benchmarks.md. */
const TIMING: Rule = {
  what: 'a timing',
  pattern: /\d(?:\.\d+)?\s?(?:µs|ns)\b|\d(?:\.\d+)?\s?% (?:faster|slower)/i,
};

/** lib/ paths whose comments are not checked (none: every comment under lib/ is). */
export const LIB_COMMENTS_EXCLUDED: readonly string[] = [];

const IMAGE = /\.(svg|png|jpe?g|gif|webp)$/i;

function walk(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return walk(p, keep);
    return keep(name) ? [p] : [];
  });
}

function lineRules(text: string, rules: Rule[]): Rule | undefined {
  // Inline links' targets are checked by the link check; their text and the prose around them here.
  return rules.find((r) => r.pattern.test(text));
}

/** Markdown: every line, code blocks included (a hash in a shell snippet is still a hash). */
export function checkMarkdown(root: string, files: string[], problems: string[]): void {
  for (const file of files) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, i) => {
        const rule = lineRules(text, [HASH, ROUND, ISSUE, DATE]);
        if (rule) problems.push(`${relative(root, file)}:${i + 1}: ${rule.what}: ${text.trim()}`);
      });
  }
}

/** Every comment of every .ts file under lib/ (but LIB_COMMENTS_EXCLUDED). */
export function checkLibComments(root: string, problems: string[]): number {
  const files = walk(join(root, 'lib'), (n) => n.endsWith('.ts')).filter(
    (f) => !LIB_COMMENTS_EXCLUDED.some((x) => relative(root, f).startsWith(x)),
  );
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false);
    const seen = new Set<number>();
    const visit = (node: ts.Node) => {
      const ranges = [
        ...(ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []),
        ...(ts.getTrailingCommentRanges(text, node.getEnd()) ?? []),
      ];
      for (const range of ranges) {
        if (seen.has(range.pos)) continue;
        seen.add(range.pos);
        const comment = text.slice(range.pos, range.end);
        comment.split('\n').forEach((line, k) => {
          const rule = lineRules(line, [HASH, ROUND, ISSUE, TIMING]);
          if (!rule) return;
          const at = source.getLineAndCharacterOfPosition(range.pos).line + k + 1;
          problems.push(`${relative(root, file)}:${at}: ${rule.what} in a comment: ${line.trim()}`);
        });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return files.length;
}

/** Every image under docs/ must be the target of some link or <img> in README.md or docs/. */
export function checkImages(root: string, files: string[], problems: string[]): number {
  const linked = new Set<string>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [
      ...text.matchAll(/\]\(\s*<?([^)\s>]+)>?/g),
      ...text.matchAll(/<img\b[^>]*\bsrc="([^"]+)"/g),
    ].map((m) => m[1].split('#')[0]);
    for (const t of targets)
      if (!/^[a-z][a-z0-9+.-]*:/i.test(t) && t !== '')
        linked.add(resolve(dirname(file), decodeURIComponent(t)));
  }
  const images = walk(join(root, 'docs'), (n) => IMAGE.test(n));
  for (const image of images)
    if (!linked.has(image))
      problems.push(`${relative(root, image)}: an image no doc links (delete it or link it)`);
  return images.length;
}
