/**
 * What the live view sends of the strings it shows: bounded in length (a key or resource of a
 * megabyte is a row of the page, not a megabyte of every push), and a column-form fenced update's
 * resource without the values of its `where` (an e-mail, an SSN): only its column names.
 */

/** Characters of one string a push carries; the rest is cut and marked with an ellipsis. */
export const LIVE_VIEW_MAX_TEXT = 300;

export function cut(text: string): string {
  return text.length > LIVE_VIEW_MAX_TEXT ? `${text.slice(0, LIVE_VIEW_MAX_TEXT - 1)}\u2026` : text;
}

/**
 * `accounts:{"email":"a@b.c","id":7}` (the SQL column form: table, then the where as JSON) becomes
 * `accounts:{"email":?,"id":?}`; any other resource is left as it is.
 */
export function redactResource(resource: string): string {
  const at = resource.indexOf(':{"');
  if (at < 0 || !resource.endsWith('}')) return resource;
  try {
    const where = JSON.parse(resource.slice(at + 1)) as unknown;
    if (where === null || typeof where !== 'object' || Array.isArray(where)) return resource;
    const columns = Object.keys(where).map((c) => `${JSON.stringify(c)}:?`);
    return `${resource.slice(0, at)}:{${columns.join(',')}}`;
  } catch {
    return resource;
  }
}

/** Strings of a list an event carries (a multi-key grant's keys). */
const MAX_LIST = 20;

/** Any other value of an event: primitives as they are, a list of strings cut, nothing bigger. */
export function textOf(value: unknown): unknown {
  if (value === null || value === undefined || typeof value === 'boolean') return value;
  if (typeof value === 'number') return value;
  if (Array.isArray(value))
    return value.slice(0, MAX_LIST).map((v) => (typeof v === 'string' ? cut(v) : textOf(v)));
  return undefined;
}
