/**
 * Fast yes/no checks from the schema definitions without zod: a load checks every entry, `safeParse` copies what it
 * accepts, and zod loads slower than an indexed open runs. So `defineSchemas` also runs against {@link checkBuilder},
 * which answers the subset of zod's API it calls with plain checks. A property test holds each check to its schema's
 * answer; a call the builder does not know fails when the checks are built, not silently.
 */
import { defineSchemas, type SessionEntryType } from "./schemas.js";
import type { Zod } from "./lazy-zod.js";
import { isObject } from "./salvage.js";

/** True when `value` satisfies the schema the check was built from. */
export type SchemaCheck = (value: unknown) => boolean;

/** zod's test of a record's value: made by `Object` or with no constructor (not a `Date`, not a `Map`). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const made = (value as { constructor?: unknown }).constructor;
  if (typeof made !== "function") return true;
  const prototype = (made as { prototype?: unknown }).prototype;
  return isObject(prototype) && Object.hasOwn(prototype, "isPrototypeOf");
}

const both =
  (test: SchemaCheck, more: SchemaCheck): SchemaCheck =>
  (value) =>
    test(value) && more(value);
const orUndefined =
  (test: SchemaCheck): SchemaCheck =>
  (value) =>
    value === undefined || test(value);
const orNull =
  (test: SchemaCheck): SchemaCheck =>
  (value) =>
    value === null || test(value);

/** One built check, with the chained refinements the definitions use; `optionalField`: an object may lack it. */
class Check {
  constructor(
    readonly test: SchemaCheck,
    readonly optionalField = false,
  ) {}
  optional = (): Check => new Check(orUndefined(this.test), true);
  nullable = (): Check => new Check(orNull(this.test), this.optionalField);
  int = (): Check => this.#and((value) => Number.isSafeInteger(value));
  min = (bound: number): Check => this.#and((value) => (value as number) >= bound);
  max = (bound: number): Check => this.#and((value) => (value as number) <= bound);
  refine = (predicate: (value: never) => unknown): Check => this.#and((value) => Boolean(predicate(value as never)));
  #and = (more: SchemaCheck): Check => new Check(both(this.test, more), this.optionalField);
}

/** An object of `shape`; as in zod, a non-optional field must be present even if its check takes `undefined`. */
function objectCheck(shape: Record<string, Check>, strict: boolean): Check {
  const fields = Object.entries(shape).map(([key, field]) => [key, field.test, !field.optionalField && field.test(undefined)] as const);
  return new Check((value) => {
    if (!isObject(value)) return false;
    for (const [key, test, mustBePresent] of fields) {
      if (!test(value[key]) || (mustBePresent && !(key in value))) return false;
    }
    return !strict || Object.keys(value).every((key) => Object.hasOwn(shape, key));
  });
}

const anyOf = (options: readonly Check[]) => new Check((value) => options.some((option) => option.test(value)));

/** The subset of zod's API that `defineSchemas` calls, building checks. */
const checkBuilder = {
  string: () => new Check((value) => typeof value === "string"),
  number: () => new Check((value) => typeof value === "number" && Number.isFinite(value)),
  boolean: () => new Check((value) => typeof value === "boolean"),
  unknown: () => new Check(() => true),
  literal: (literal: unknown) => new Check((value) => value === literal),
  enum: (values: readonly unknown[]) => {
    const known = new Set(values);
    return new Check((value) => known.has(value));
  },
  array: (element: Check) => new Check((value) => Array.isArray(value) && value.every((item) => element.test(item))),
  union: anyOf,
  discriminatedUnion: (_key: string, options: readonly Check[]) => anyOf(options),
  record: (_key: Check, item: Check) => new Check((value) => isPlainObject(value) && Object.values(value).every((field) => item.test(field))),
  looseObject: (shape: Record<string, Check>) => objectCheck(shape, false),
  strictObject: (shape: Record<string, Check>) => objectCheck(shape, true),
};

/** The check of the schema `define` builds from `z` (for definitions other than the format's, such as tests). */
export function checkOf(define: (z: Zod) => unknown): SchemaCheck {
  return (define(checkBuilder as unknown as Zod) as Check).test;
}

type Schemas = ReturnType<typeof defineSchemas>;

/** The checks of the schemas `defineSchemas` builds, under the same names. */
type SchemaChecks = { [K in Exclude<keyof Schemas, "ENTRY_SCHEMAS">]: SchemaCheck } & { ENTRY_SCHEMAS: Readonly<Record<SessionEntryType, SchemaCheck>> };

let built: SchemaChecks | undefined;

/** Every check, built on the first call. */
export function schemaChecks(): SchemaChecks {
  built ??= checkTests(defineSchemas(checkBuilder as unknown as Zod)) as SchemaChecks;
  return built;
}

/** Each check's test, in nested groups (`ENTRY_SCHEMAS`) too. */
function checkTests(group: object): object {
  return Object.fromEntries(Object.entries(group).map(([key, check]) => [key, check instanceof Check ? check.test : checkTests(check as object)]));
}

/** The check of a known entry type, or `undefined` for a type this version does not know. */
export function entryCheckFor(type: string): SchemaCheck | undefined {
  const checks = schemaChecks().ENTRY_SCHEMAS;
  return Object.hasOwn(checks, type) ? checks[type as SessionEntryType] : undefined;
}
