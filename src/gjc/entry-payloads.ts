/**
 * What the face does to the free-form payloads GJC's app hands to `appendModeChange`,
 * `appendCustomEntry` and `appendCustomMessageEntry` before the engine keeps them. The engine
 * holds an appended entry as given and writes it as JSON; a key whose value is `undefined` then
 * exists live but not after a reload, so the live entry is made the shape the file will have.
 * And a custom message's `details` lose the fields GJC's agent session keeps there only for its
 * own bookkeeping while a message is pending, which GJC never persists.
 */

/** The `details` keys of a custom message that GJC's agent session uses in flight and never persists. */
export const INTERNAL_DETAILS_FIELDS: readonly string[] = ["__pendingDisplayTag", "ownedCompletions"];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * `value` as it reads back from its JSON line: keys of plain objects whose value is `undefined`
 * dropped, `undefined` array elements made `null`, at every depth. Anything else is kept as it is,
 * and a value with nothing to change is returned itself (no copy on the common path).
 */
export function asPersisted<T>(value: T): T {
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((element: unknown, index) => {
      const next = element === undefined ? null : asPersisted(element);
      if (next !== element) (copy ??= [...value])[index] = next;
    });
    return (copy ?? value) as T;
  }
  if (!isPlainObject(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined) {
      copy ??= { ...value };
      delete copy[key];
      continue;
    }
    const next = asPersisted(field);
    if (next !== field) (copy ??= { ...value })[key] = next;
  }
  return (copy ?? value) as T;
}

/** `details` without {@link INTERNAL_DETAILS_FIELDS} (itself when it has none, or is not a plain object), then {@link asPersisted}. */
export function persistedDetails<T>(details: T): T {
  if (!isPlainObject(details) || !INTERNAL_DETAILS_FIELDS.some((key) => Object.hasOwn(details, key))) return asPersisted(details);
  const copy: Record<string, unknown> = { ...details };
  for (const key of INTERNAL_DETAILS_FIELDS) delete copy[key];
  return asPersisted(copy) as T;
}
