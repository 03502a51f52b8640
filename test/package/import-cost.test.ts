/**
 * What importing the built package loads: neither zod nor commander nor the addon until a
 * call needs them (bench/import.bench.mjs measures the time; this checks the cause, without
 * timing). A child process imports dist/index.js and reports the CommonJS modules loaded and
 * the shared objects mapped into it, before and after the first calls.
 */
import path from "node:path";

import { describe, expect, it } from "vitest";

import { REPO_ROOT, run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

const INDEX = path.join(REPO_ROOT, "dist", "index.js");

interface Loaded {
  readonly modules: string[];
  readonly mapped: string[];
}
interface Stages {
  readonly imported: Loaded;
  readonly addonUsed: Loaded;
  readonly schemaUsed: Loaded;
}

function stages(): Stages {
  const base = makeTempDir("gjc-import-cost-");
  try {
    const script = `
import fs from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const loaded = () => ({
  modules: Object.keys(require.cache),
  mapped: [...new Set(fs.readFileSync("/proc/self/maps", "utf8").split("\\n").map((l) => l.split(/\\s+/)[5]).filter((f) => f && f.endsWith(".node")))],
});
const m = await import(${JSON.stringify(INDEX)});
const imported = loaded();
const identity = m.workspaceIdentity(process.argv[1]);
if (identity.kind !== "identity") throw new Error(identity.message);
const addonUsed = loaded();
if (!m.SessionHeaderSchema.safeParse({ type: "session", id: "x" }).success) throw new Error("header refused");
process.stdout.write(JSON.stringify({ imported, addonUsed, schemaUsed: loaded() }));`;
    const result = run(process.execPath, ["--input-type=module", "-e", script, base.path]);
    expect(result.status, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as Stages;
  } finally {
    base.remove();
  }
}

/** Every specifier the module loader resolves while the child only imports the package (ESM included). */
function resolvedByImport(): string[] {
  const hooks = `export async function resolve(specifier, context, next) { process.stderr.write("resolve " + specifier + "\\n"); return next(specifier, context); }`;
  const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
  const result = run(process.execPath, [
    "--import",
    `data:text/javascript,${encodeURIComponent(register)}`,
    "--input-type=module",
    "-e",
    `await import(${JSON.stringify(INDEX)});`,
  ]);
  expect(result.status, result.stderr).toBe(0);
  return result.stderr
    .split("\n")
    .filter((line) => line.startsWith("resolve "))
    .map((line) => line.slice("resolve ".length));
}

const has = (list: readonly string[], pattern: RegExp): boolean => list.some((item) => pattern.test(item));
const ZOD = /[/\\]node_modules[/\\]zod[/\\]/;
const COMMANDER = /[/\\]node_modules[/\\]commander[/\\]/;
const ADDON = /gjc[-_]session[-_]store(\.glibc)?\.node$/;

describe.runIf(process.platform === "linux")("import cost", () => {
  it("no module the import resolves is zod or commander", () => {
    const resolved = resolvedByImport();
    // The control: the hook sees the import itself.
    expect(resolved).toContain(INDEX);
    expect(resolved.filter((specifier) => /^(zod|commander)(\/|$)/.test(specifier))).toEqual([]);
  });

  it("the import loads neither zod, commander nor the addon; the first calls that need them do", () => {
    const { imported, addonUsed, schemaUsed } = stages();
    expect(has(imported.modules, ZOD)).toBe(false);
    expect(has(imported.modules, COMMANDER)).toBe(false);
    expect(has(imported.mapped, ADDON)).toBe(false);
    // The controls: each is loaded by the first call that needs it, and only then.
    expect(has(addonUsed.mapped, ADDON)).toBe(true);
    expect(has(addonUsed.modules, ZOD)).toBe(false);
    expect(has(schemaUsed.modules, ZOD)).toBe(true);
    expect(has(schemaUsed.modules, COMMANDER)).toBe(false);
  });
});
