/**
 * zod, loaded on the first schema use instead of at import: zod is most of the package's
 * import cost, and most first calls (create, append, flush) never validate. The API stays
 * synchronous: zod's CommonJS build is loaded with `require`, so the first `safeParse` pays
 * for it and returns as before.
 */
import { createRequire } from "node:module";

import type { z } from "zod";

/** The zod namespace (`z`). */
export type Zod = typeof z;

let zod: Zod | undefined;

function loadZod(): Zod {
  zod ??= (createRequire(import.meta.url)("zod") as { z: Zod }).z;
  return zod;
}

/** A set of schemas built on first use; see {@link lazySchemas}. */
export interface LazySchemas<S extends Record<string, object>> {
  /** Every schema, built (and zod loaded) on the first call. */
  readonly all: () => S;
  /**
   * A stand-in for one schema, usable as an exported constant: every property read goes to
   * the real schema, built on the first one. zod's methods close over their schema, so
   * `stand-in.safeParse(v)` is the real `safeParse`.
   */
  readonly lazy: <K extends keyof S>(key: K) => S[K];
}

/** Wraps the schema definitions `define` so that nothing is built until a schema is used. */
export function lazySchemas<S extends Record<string, object>>(define: (z: Zod) => S): LazySchemas<S> {
  let built: S | undefined;
  const all = (): S => {
    built ??= define(loadZod());
    return built;
  };
  const lazy = <K extends keyof S>(key: K): S[K] => {
    const real = (): S[K] => all()[key];
    return new Proxy({} as S[K], {
      get: (_target, property) => Reflect.get(real(), property),
      set: (_target, property, value) => Reflect.set(real(), property, value),
      has: (_target, property) => Reflect.has(real(), property),
      ownKeys: () => Reflect.ownKeys(real()),
      getOwnPropertyDescriptor: (_target, property) => {
        const descriptor = Reflect.getOwnPropertyDescriptor(real(), property);
        // A proxy may not report a property its (empty) target lacks as non-configurable.
        return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
      },
      getPrototypeOf: () => Reflect.getPrototypeOf(real()),
    });
  };
  return { all, lazy };
}
