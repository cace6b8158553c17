// Python's semantics for the values the kernel's answers are made of, where JavaScript's differ:
// a string's length and order in code points, `repr`, truth, and the kinds the refusals name.
// The context views of an export (views.ts and the views*.ts modules) answer in the kernel's
// words with them.

import { PyFloat } from './data';

export function strOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function has(table: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(table, key);
}

/** Python's `len` of a string: code points. */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) {
    n++;
  }
  return n;
}

/** `text` cut to `limit` code points with an ellipsis, as compare_requests.row_text and
 * view.context.message_preview cut (`text[: limit - 1] + "…"`). */
export function cutText(text: string, limit: number): string {
  if (codePoints(text) <= limit) {
    return text;
  }
  return Array.from(text).slice(0, limit - 1).join('') + '…';
}

/** Python's string order (code points), for the tool counts' tie break. */
export function pyCompare(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let k = 0; k < Math.min(x.length, y.length); k++) {
    const d = x[k].codePointAt(0)! - y[k].codePointAt(0)!;
    if (d) {
      return d;
    }
  }
  return x.length - y.length;
}

/** A value's JSON kind as the kernel's refusals name it (pi_lab.view.payload.kind_of). */
export function jsonKind(value: unknown): string {
  if (value === null || value === undefined || typeof value === 'boolean') {
    return String(value ?? null); // null, true or false, as JSON writes them
  }
  if (typeof value === 'number' || typeof value === 'string') {
    return `a ${typeof value}`;
  }
  return Array.isArray(value) ? 'a list' : 'an object';
}

/** Python's truth of a JSON value (`bool(args.get(...))`). */
export function pyTruthy(value: unknown): boolean {
  if (Array.isArray(value)) {
    return value.length > 0;
  }
  if (value !== null && typeof value === 'object') {
    return Object.keys(value).length > 0;
  }
  return Boolean(value);
}

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof PyFloat);
}


/** Python's `repr` of a simple JSON value, for the refusals' text (others as JSON). */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) {
    return 'None';
  }
  if (typeof value === 'boolean') {
    return value ? 'True' : 'False';
  }
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    const body = value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
    return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
  }
  return JSON.stringify(value);
}
