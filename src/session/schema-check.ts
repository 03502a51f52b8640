/**
 * Fast yes/no checks compiled from the zod schemas.
 *
 * Loading types every entry of a file, which can hold 100k of them. `safeParse` builds an output
 * copy of every object it accepts, and on a large session that garbage costs more than the
 * `JSON.parse` of the file. A compiled check walks the same definition and allocates nothing.
 * It is derived from the schema on first use, so the schemas stay the only statement of the
 * format; any construct it does not know is delegated to `safeParse` for that subtree, and a
 * property test holds the two to the same answer.
 */
import type { z } from "zod";
import { SESSION_ENTRY_TYPES, entrySchemaFor, type SessionEntryType } from "./schemas.js";

/** True when `value` satisfies the schema the check was compiled from. */
export type SchemaCheck = (value: unknown) => boolean;

/** The parts of a zod 4 definition the compiler reads. */
interface Definition {
  type: string;
  checks?: unknown[];
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  innerType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  values?: unknown[];
  entries?: Record<string, unknown>;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
}

function definitionOf(schema: z.ZodType): Definition {
  return (schema as unknown as { def: Definition }).def;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Compiles `schema` into a check that answers as `schema.safeParse(value).success` does. */
export function compileSchemaCheck(schema: z.ZodType): SchemaCheck {
  const def = definitionOf(schema);
  const delegate: SchemaCheck = (value) => schema.safeParse(value).success;
  // Refinements (`.int()`, `.min()`, ...) are rare here; zod evaluates them.
  if (def.checks !== undefined && def.checks.length > 0) return delegate;
  switch (def.type) {
    case "unknown":
    case "any":
      return () => true;
    case "string":
      return (value) => typeof value === "string";
    case "number":
      return (value) => typeof value === "number" && Number.isFinite(value);
    case "boolean":
      return (value) => typeof value === "boolean";
    case "literal": {
      const values = def.values ?? [];
      return (value) => values.includes(value);
    }
    case "enum": {
      const values = new Set(Object.values(def.entries ?? {}));
      return (value) => values.has(value);
    }
    case "optional": {
      const inner = compileSchemaCheck(def.innerType as z.ZodType);
      return (value) => value === undefined || inner(value);
    }
    case "nullable": {
      const inner = compileSchemaCheck(def.innerType as z.ZodType);
      return (value) => value === null || inner(value);
    }
    case "array": {
      const element = compileSchemaCheck(def.element as z.ZodType);
      return (value) => Array.isArray(value) && value.every((item) => element(item));
    }
    case "union": {
      const options = (def.options ?? []).map(compileSchemaCheck);
      return (value) => options.some((option) => option(value));
    }
    case "record":
      return compileRecord(def, delegate);
    case "object":
      return compileObject(def, delegate);
    default:
      return delegate;
  }
}

function compileRecord(def: Definition, delegate: SchemaCheck): SchemaCheck {
  if (definitionOf(def.keyType as z.ZodType).type !== "string") return delegate;
  const valueCheck = compileSchemaCheck(def.valueType as z.ZodType);
  return (value) => isObject(value) && Object.values(value).every((item) => valueCheck(item));
}

function compileObject(def: Definition, delegate: SchemaCheck): SchemaCheck {
  const fields = Object.entries(def.shape ?? {}).map(
    ([key, field]) => [key, compileSchemaCheck(field)] as const,
  );
  const catchall = def.catchall === undefined ? "strip" : definitionOf(def.catchall).type;
  if (catchall !== "strip" && catchall !== "unknown" && catchall !== "never") return delegate;
  const known = new Set(fields.map(([key]) => key));
  return (value) => {
    if (!isObject(value)) return false;
    for (const [key, check] of fields) {
      if (!check(value[key])) return false;
    }
    return catchall !== "never" || Object.keys(value).every((key) => known.has(key));
  };
}

// Compiled on the first lookup, which is the first use of the schemas (zod loads then).
let entryChecks: ReadonlyMap<string, SchemaCheck> | undefined;

/**
 * The compiled check of a known entry type, or `undefined` for a type this version does not
 * know.
 */
export function entryCheckFor(type: string): SchemaCheck | undefined {
  entryChecks ??= new Map(
    SESSION_ENTRY_TYPES.map((known) => [known, compileSchemaCheck(entrySchemaFor(known) as z.ZodType)]),
  );
  return entryChecks.get(type as SessionEntryType);
}
