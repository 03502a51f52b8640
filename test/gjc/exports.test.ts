// Every name GJC 0.15's app imports from the session modules the adoption patch replaces
// (test/fixtures/gjc/app-imports.json, collected from GJC's sources) must resolve from
// `gjc-session-store/gjc`: the values at run time, the types in the entry's declarations.
// The package export map must name the entry's built files, as it does for ./pi.
import fs from "node:fs";
import path from "node:path";

import ts from "typescript";
import { describe, expect, it } from "vitest";

import * as gjc from "../../src/gjc/index.js";
import { REPO_ROOT } from "../helpers/processes.js";

interface ModuleImports {
  values: string[];
  types: string[];
}

const fixture = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "test", "fixtures", "gjc", "app-imports.json"), "utf8")) as Record<
  string,
  ModuleImports | string
>;
const modules = Object.entries(fixture).filter((entry): entry is [string, ModuleImports] => typeof entry[1] !== "string");

/** The types GJC's app imports that the face does not define yet; each must still be missing, so the list only shrinks. */
const PENDING_TYPES = new Set(["RecoveryHydrationContext", "RecoveryHydrationPromotionFence"]);

/** Every name the entry exports, types included, as the type checker sees src/gjc/index.ts. */
function exportedNames(): Set<string> {
  const entry = path.join(REPO_ROOT, "src", "gjc", "index.ts");
  const program = ts.createProgram({
    rootNames: [entry],
    options: { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true },
  });
  const checker = program.getTypeChecker();
  const symbol = checker.getSymbolAtLocation(program.getSourceFile(entry)!);
  return new Set(checker.getExportsOfModule(symbol!).map((s) => s.getName()));
}

describe("gjc-session-store/gjc exports what GJC's app imports", () => {
  it("the fixture holds GJC's six modules and their 70 names", () => {
    expect(modules.map(([name]) => name).sort()).toEqual([
      "blob-store",
      "history-storage",
      "session-manager",
      "session-manager-internal",
      "session-open-errors",
      "session-storage",
    ]);
    expect(new Set(modules.flatMap(([name, { values, types }]) => [...values, ...types].map((n) => `${name}:${n}`))).size).toBe(70);
  });

  it("every value resolves at run time to a function, class or constant", () => {
    const missing: string[] = [];
    for (const [module, { values }] of modules) {
      for (const name of values) if ((gjc as Record<string, unknown>)[name] === undefined) missing.push(`${module}: ${name}`);
    }
    expect(missing).toEqual([]);
  });

  it("every type resolves in the entry's declarations (the pending ones still missing)", () => {
    const names = exportedNames();
    const missing: string[] = [];
    const landed: string[] = [];
    for (const [module, { types }] of modules) {
      for (const name of types) {
        if (PENDING_TYPES.has(name)) {
          if (names.has(name)) landed.push(name);
        } else if (!names.has(name)) missing.push(`${module}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
    expect(landed, "now exported: remove from PENDING_TYPES").toEqual([]);
  }, 120_000);

  it("the package's export map names ./gjc's built types and module, as it does ./pi", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { exports: Record<string, unknown> };
    expect(pkg.exports["./gjc"]).toEqual({ types: "./dist/gjc/index.d.ts", default: "./dist/gjc/index.js" });
    const bundler = fs.readFileSync(path.join(REPO_ROOT, "scripts", "bundle-dist.mjs"), "utf8");
    expect(bundler).toContain('"gjc/index": "gjc/index.js"');
  });
});
