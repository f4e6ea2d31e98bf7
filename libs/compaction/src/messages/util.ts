/**
 * Shared helpers of the message converters: safe type checks on untrusted JSON, a bounded
 * problem collector, id and name rules, and small pure utilities. Nothing here throws on
 * any input.
 */
import { FieldProblem } from '../errors';
import { Block, CanonicalMessage, Extras, Provider } from './canonical';

export type ParseResult<T> = { ok: true; value: T } | { ok: false; errors: FieldProblem[] };

/** At most this many problems are collected per parse: a huge malformed body stops early. */
export const MAX_PROBLEMS = 200;

export class Problems {
  readonly list: FieldProblem[] = [];

  add(field: string, message: string): void {
    if (this.list.length < MAX_PROBLEMS) this.list.push({ field, message });
  }

  get full(): boolean {
    return this.list.length >= MAX_PROBLEMS;
  }

  get count(): number {
    return this.list.length;
  }

  result<T>(value: T): ParseResult<T> {
    return this.list.length === 0 ? { ok: true, value } : { ok: false, errors: this.list };
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** A short name of a JSON value's type for messages ("got number"); never calls toString. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** The fields of `obj` other than `known`, or undefined when there are none. Keeps `__proto__` as an own key. */
export function extrasOf(obj: Record<string, unknown>, known: readonly string[]): Extras | undefined {
  const entries: Array<[string, unknown]> = [];
  for (const key of Object.keys(obj)) if (!known.includes(key)) entries.push([key, obj[key]]);
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}

/** True when every own key of `obj` is in `allowed`. */
export function onlyKeys(obj: Record<string, unknown>, allowed: readonly string[]): boolean {
  return Object.keys(obj).every((k) => allowed.includes(k));
}

/** `extras` and the matching `origin`, ready to spread into a block or message. */
export function withExtras(extras: Extras | undefined, origin: Provider): { extras?: Extras; origin?: Provider } {
  return extras ? { extras, origin } : {};
}

/**
 * Tool call ids: what providers produce (`toolu_…`, `call_…`, `chatcmpl-tool-…`,
 * `functions.name:0`) and nothing that could smuggle markup or whitespace.
 */
export const TOOL_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,256}$/;
export const TOOL_ID_RULE = 'must be a string of 1–256 characters';
export const TOOL_ID_CHARS_RULE = "may contain only letters, digits and '_', '-', '.', ':'";

/** Checks a tool call id; returns it when valid. */
export function checkToolId(value: unknown, field: string, problems: Problems): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) {
    problems.add(field, `${TOOL_ID_RULE}${typeof value === 'string' ? '' : ` (got ${kindOf(value)})`}`);
    return undefined;
  }
  if (!TOOL_ID_PATTERN.test(value)) {
    problems.add(field, TOOL_ID_CHARS_RULE);
    return undefined;
  }
  return value;
}

export const TOOL_NAME_RULE = 'must be a string of 1–128 characters';

export function checkToolName(value: unknown, field: string, problems: Problems): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 128) {
    problems.add(field, `${TOOL_NAME_RULE}${typeof value === 'string' ? '' : ` (got ${kindOf(value)})`}`);
    return undefined;
  }
  return value;
}

export function checkString(value: unknown, field: string, problems: Problems): string | undefined {
  if (typeof value === 'string') return value;
  problems.add(field, value === undefined ? 'is required (a string)' : `must be a string (got ${kindOf(value)})`);
  return undefined;
}

/** The id a block gives to a tool call: a tool_use, or an OpenAI tool call of an unknown type kept opaque. */
export function toolUseIdOf(block: Block): string | undefined {
  if (block.type === 'tool_use') return block.id;
  if (block.type === 'opaque' && block.slot === 'tool_calls' && isRecord(block.raw) && typeof block.raw.id === 'string') return block.raw.id;
  return undefined;
}

export function isThinking(block: Block): boolean {
  return block.type === 'thinking' || block.type === 'redacted_thinking';
}

/** Whether `block`'s extras may be written to `target`. */
export function extrasGoTo(block: { origin?: Provider }, message: CanonicalMessage | undefined, target: Provider): boolean {
  return (block.origin ?? message?.origin) === target;
}

/** 32-bit FNV-1a, base 36: a short deterministic suffix for rewritten ids. */
export function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

/** JSON.stringify that never throws (cycles, BigInt) and never returns undefined. */
export function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}
