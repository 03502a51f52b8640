/**
 * zod, loaded on the first schema use instead of at import: it is most of the package's import cost, and most first
 * calls (create, append, flush) never validate. Its CommonJS build is `require`d, so the API stays synchronous.
 */
import { createRequire } from "node:module";

import type { z } from "zod";

/** The zod namespace (`z`). */
export type Zod = typeof z;

let zod: Zod | undefined;

/**
 * Wraps the schema definitions `define` so that nothing is built until a schema is used. `lazy(key)` is a stand-in
 * usable as an exported constant: every property read goes to the real schema, built (zod loaded) on the first one;
 * zod's methods close over their schema, so `standIn.safeParse(v)` is the real `safeParse`.
 */
export function lazySchemas<S extends Record<string, object>>(define: (z: Zod) => S): { lazy: <K extends keyof S>(key: K) => S[K] } {
  let built: S | undefined;
  const lazy = <K extends keyof S>(key: K): S[K] => {
    const real = (): S[K] => {
      zod ??= (createRequire(import.meta.url)("zod") as { z: Zod }).z;
      built ??= define(zod);
      return built[key];
    };
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
  return { lazy };
}
