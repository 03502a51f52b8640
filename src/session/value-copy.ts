/**
 * A deep copy for the values an entry holds. Those are JSON-shaped almost always (records parsed from a line, or
 * messages an app built from literals), and for them `structuredClone` does far more work than a copy needs: it
 * serialises the whole graph and copies every string, while strings are immutable and can be shared. Anything
 * else an append accepted (a typed array, a `Date`, a class instance) is handed to `structuredClone`, so the copy
 * is what it made of it, throwing where it throws.
 */

/**
 * A deep copy of `value`: arrays and plain objects (prototype `Object.prototype` or `null`) are rebuilt, element by
 * element and own enumerable key by key in order (`undefined` values kept); strings, other scalars and functions
 * are shared (none can be edited through); any other object is `structuredClone`d. Unlike `structuredClone`, an object reached twice is copied twice: a
 * copy handed to a caller that edits it must not tie two places together that the file keeps apart. Recursion is
 * as deep as the value nests, which an entry's bounds keep shallow (`MAX_ENTRY_DEPTH`).
 * @throws DOMException `DataCloneError` where `structuredClone` throws on such an object
 */
export function copyValue<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  return copyObject(value) as T;
}

function copyObject(value: object): unknown {
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return structuredClone(value);
    const copy = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      copy[i] = typeof item === "object" && item !== null ? copyObject(item) : item;
    }
    return copy;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value);
  const record = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  // `for…in` with an own check walks the same keys in the same order as `Object.keys` without making an array of them
  // for every object copied.
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    const item = record[key];
    const copied = typeof item === "object" && item !== null ? copyObject(item) : item;
    // A parsed line can hold an own `__proto__` key; assigned, it would set the copy's prototype instead.
    if (key === "__proto__") Object.defineProperty(copy, key, { value: copied, writable: true, enumerable: true, configurable: true });
    else copy[key] = copied;
  }
  return copy;
}
