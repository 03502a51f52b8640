// One error family: every error class of the library derives from GjcError (found by reading
// the sources, so a new class cannot slip past), each exported one is a GjcError at run time
// with its own name and a string code, and the library throws no bare Error or RangeError.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import * as library from "../src/index.js";
import { GjcError } from "../src/index.js";

const SRC = path.resolve(import.meta.dirname, "..", "src");
const sources = fs
  .readdirSync(SRC, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts"))
  .map((file) => ({ file, text: fs.readFileSync(path.join(SRC, file), "utf8") }));

describe("the error family", () => {
  it("every error class in src/ extends GjcError, directly or through another of the family", () => {
    const classes = sources.flatMap(({ file, text }) =>
      [...text.matchAll(/class (\w+)(?:<[^>]*>)? extends (\w+)/g)]
        .filter(([, name, base]) => /Error$/.test(name!) || /Error$/.test(base!))
        .map(([, name, base]) => ({ file, name: name!, base: base! })),
    );
    expect(classes.length).toBeGreaterThanOrEqual(10);
    const bases = new Map(classes.map(({ name, base }) => [name, base]));
    const inFamily = (name: string, seen = new Set<string>()): boolean => {
      if (name === "GjcError") return true;
      const base = bases.get(name);
      if (base === undefined || seen.has(name)) return false;
      seen.add(name);
      return inFamily(base, seen);
    };
    const outside = classes.filter(({ name }) => name !== "GjcError" && !inFamily(name)).map(({ file, name, base }) => `${file}: ${name} extends ${base}`);
    expect(outside).toEqual([]);
  });

  it("every exported error class is a GjcError, named after itself", () => {
    const exported = Object.entries(library).filter(([name, value]) => /^[A-Z]\w*Error$/.test(name) && typeof value === "function");
    expect(exported.map(([name]) => name).sort()).toEqual(
      [
        "AuditError",
        "GjcError",
        "HistoryError",
        "MigrationError",
        "NativeUnavailableError",
        "PersistSanitizeError",
        "ScopeError",
        "SecureFsError",
        "SessionFormatError",
        "SessionManagerError",
        "SessionTreeError",
        "StorageError",
      ].sort(),
    );
    for (const [name, value] of exported) {
      const errorClass = value as { prototype: object; name: string };
      expect(errorClass === GjcError || errorClass.prototype instanceof GjcError, name).toBe(true);
      expect(errorClass.name).toBe(name);
    }
    const made = new library.StorageError("not_found", "gone");
    expect(made).toBeInstanceOf(GjcError);
    expect([made.name, made.code]).toEqual(["StorageError", "not_found"]);
  });

  it("the library throws no bare Error, TypeError or RangeError", () => {
    const bare = sources.flatMap(({ file, text }) =>
      text
        .split("\n")
        .map((line, index) => ({ line, at: `${file}:${index + 1}` }))
        .filter(({ line }) => /throw new (?:Error|TypeError|RangeError)\b/.test(line))
        .map(({ at }) => at),
    );
    // The one exception: the addon answering a number TypeScript does not know is a build mismatch, not a refusal.
    expect(bare).toEqual([expect.stringMatching(/^native[/\\]index\.ts:/)]);
  });
});
