/**
 * What a JSON body may hold before anything of it is used: a nesting depth (JSON.stringify and
 * PostgreSQL's JSON parser recurse, so a body nested thousands deep failed as a 500), and text that
 * PostgreSQL can store as sent (no U+0000, no unpaired UTF-16 surrogate). Both checks are linear
 * scans; the byte scans run before JSON.parse, so a refused body is never parsed.
 */
import { stringEnd } from '../proxy/json-scan';

/** The deepest nesting of arrays and objects a body may have. Real requests nest about 10 deep (tool inputs and schemas included). */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Whether the JSON text in `body` nests arrays and objects deeper than `limit` (brackets inside strings do not count). Malformed text is left to JSON.parse. */
export function nestsDeeperThan(body: Buffer, limit: number): boolean {
  let depth = 0;
  const n = body.length;
  for (let i = 0; i < n; i++) {
    const b = body[i];
    if (b === QUOTE) {
      const end = stringEnd(body, i + 1);
      if (end < 0) return false;
      i = end;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > limit) return true;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

const ESCAPE_NUL = Buffer.from('\\u0000');
const ESCAPE_U = Buffer.from('\\u');

/**
 * Whether the JSON text may hold U+0000 or a lone surrogate: both can only be written as escapes
 * (`\u0000`, `\uD800`–`\uDFFF`; raw control characters are invalid JSON, and the UTF-8 decoder turns
 * raw surrogate bytes into U+FFFD). A yes is confirmed on the parsed value by `unstorableText`
 * (an escaped backslash or a surrogate pair also says yes here).
 */
export function mayHoldUnstorableText(body: Buffer): boolean {
  if (body.indexOf(ESCAPE_NUL) >= 0) return true;
  for (let at = body.indexOf(ESCAPE_U); at >= 0; at = body.indexOf(ESCAPE_U, at + 2)) {
    const d = body[at + 2] | 0x20; // lower case
    const e = body[at + 3] | 0x20;
    if (d === 0x64 /* d */ && ((e >= 0x38 && e <= 0x39) || (e >= 0x61 && e <= 0x66))) return true;
  }
  return false;
}

export interface UnstorableText {
  /** The field's path, as validation errors name fields: `messages[2].content[0].text`. */
  field: string;
  message: string;
}

// ES2024's String.prototype.isWellFormed (native since Node 20); the workspace's lib is ES2023.
type WellFormedCheck = { isWellFormed(): boolean };

/** What is wrong with a text ("contains …"), or undefined. */
function problemOf(text: string): string | undefined {
  if (text.includes('\u0000')) return 'U+0000 (NUL), which PostgreSQL cannot store in text';
  if (!(text as string & WellFormedCheck).isWellFormed()) return 'an unpaired UTF-16 surrogate (\\uD800-\\uDFFF), which is not valid Unicode text';
  return undefined;
}

const childPath = (path: string, key: string | number) => (typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`);

/** The first string or object key in `value` that holds U+0000 or an unpaired surrogate (iterative: any depth). */
export function unstorableText(value: unknown): UnstorableText | undefined {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      const problem = problemOf(item);
      if (problem) return { field: path === '' ? '(body)' : path, message: `contains ${problem}` };
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], childPath(path, i)]);
    } else if (typeof item === 'object' && item !== null) {
      const keys = Object.keys(item);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i];
        const problem = problemOf(key);
        if (problem) return { field: childPath(path, JSON.stringify(key).slice(1, -1)), message: `is a key that contains ${problem}` };
        stack.push([(item as Record<string, unknown>)[key], childPath(path, key)]);
      }
    }
  }
  return undefined;
}
