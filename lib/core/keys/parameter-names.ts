/**
 * Parameter names for key templates: read from a method's source (what `<name>` placeholders
 * refer to) and the identifier check @KeyParam and placeholders share.
 */

const IDENT = /^[A-Za-z_$][\w$]*$/;

/** true for a JavaScript identifier (a name a placeholder or @KeyParam can use). */
export function isIdentifier(name: unknown): name is string {
  return typeof name === 'string' && IDENT.test(name);
}

/** Reads parameter names from a function's source; destructured parameters have no name (null). */
export function parseParameterNames(fn: Function): (string | null)[] {
  const src = Function.prototype.toString
    .call(fn)
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/[^\n]*/g, '');
  const open = src.indexOf('(');
  if (open < 0) return [];
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  let quote: string | null = null;
  for (let i = open + 1; i < src.length; i++) {
    const ch = src[i];
    if (quote) {
      current += ch;
      if (ch === '\\') current += src[++i] ?? '';
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"' || ch === "'" || ch === '`') quote = ch;
    else if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') {
      if (depth === 0) break;
      depth--;
    } else if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
      continue;
    }
    current += ch;
  }
  if (current.trim()) parts.push(current);
  return parts.map((p) => {
    const name = p
      .trim()
      .replace(/^\.\.\./, '')
      .split('=')[0]
      .trim();
    return isIdentifier(name) ? name : null;
  });
}
