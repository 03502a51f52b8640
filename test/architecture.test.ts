// The house drawn from the code: every import of src/ (type-only ones included) is read with
// TypeScript's own pre-processor, and the graph must have no cycle and keep the dependency
// rules of the architecture (layers only import downward; session/ is pure; only native/
// loads the addon and only fs/ talks to native/; cli/ goes through the public entry;
// history/ is kept apart from sessions).
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "..", "src");

/** Top-level parts of src/, bottom-up: a module may import only its own part or an earlier one. */
const LAYERS = ["errors.ts", "native", "fs", "session", "storage", "scope", "migration", "manager", "history", "audit", "pi", "gjc", "index.ts", "cli"];

/** Each module's imports: other src modules (relative to src/, `/`-separated) or bare specifiers. */
function importGraph(): Map<string, string[]> {
  const modules = fs
    .readdirSync(SRC, { recursive: true, encoding: "utf8" })
    .filter((file) => /\.c?ts$/.test(file) && !file.endsWith(".d.ts"))
    .map((file) => file.split(path.sep).join("/"));
  const graph = new Map<string, string[]>();
  for (const module of modules) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(SRC, module), "utf8"), true, true);
    graph.set(
      module,
      importedFiles.map(({ fileName }) => {
        if (!fileName.startsWith(".")) return fileName;
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(module), fileName));
        return target.replace(/\.js$/, ".ts").replace(/\.cjs$/, ".cts");
      }),
    );
  }
  return graph;
}

/** Every cycle's modules (strongly connected components of more than one module, or a self-import). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (module: string): void => {
    index.set(module, index.size);
    low.set(module, index.get(module)!);
    stack.push(module);
    for (const next of graph.get(module) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(module, Math.min(low.get(module)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(module, Math.min(low.get(module)!, index.get(next)!));
      }
    }
    if (low.get(module) !== index.get(module)) return;
    const component = stack.splice(stack.indexOf(module));
    if (component.length > 1 || graph.get(module)!.includes(module)) found.push(component.sort());
  };
  for (const module of graph.keys()) if (!index.has(module)) visit(module);
  return found;
}

/** Why the import `from` -> `to` breaks a rule, or undefined when it keeps them all. */
function brokenRule(from: string, to: string, internal: boolean): string | undefined {
  const [fromPart, toPart] = [from.split("/")[0]!, to.split("/")[0]!];
  if (to === "#binding") return fromPart === "native" ? undefined : "only src/native/ loads the addon";
  if (!internal) {
    return fromPart === "session" && /^(node:)?fs(\/|$)/.test(to) ? "src/session/ is pure: no file system" : undefined;
  }
  if (fromPart === toPart) return undefined;
  if (!LAYERS.includes(fromPart) || !LAYERS.includes(toPart)) return `${fromPart} or ${toPart} is not in the layer list`;
  if (LAYERS.indexOf(toPart) > LAYERS.indexOf(fromPart)) return "an import that runs upward";
  if (fromPart === "session" && toPart !== "errors.ts") return "src/session/ is pure: it imports only the error root";
  if (toPart === "native" && fromPart !== "fs") return "everything but src/fs/ talks to src/fs/, not to src/native/";
  if (fromPart === "cli" && to !== "index.ts") return "src/cli/ uses only what src/index.ts exports";
  if (fromPart === "history" && ["session", "storage", "scope", "migration", "manager"].includes(toPart) && to !== "scope/agent-dir.ts") {
    return "src/history/ is independent of sessions";
  }
  return undefined;
}

describe("the import graph of src/", () => {
  const graph = importGraph();

  it("reads every module (the check cannot pass on an empty graph)", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get("session/load.ts")).toContain("session/jsonl.ts");
  });

  it("has no import cycle", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("keeps the layer rules", () => {
    const broken: string[] = [];
    for (const [from, imports] of graph) {
      for (const to of imports) {
        const why = brokenRule(from, to, graph.has(to));
        if (why !== undefined) broken.push(`${from} -> ${to}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("would catch a cycle and an upward or forbidden import", () => {
    expect(
      cycles(
        new Map([
          ["a.ts", ["b.ts"]],
          ["b.ts", ["a.ts"]],
          ["c.ts", ["a.ts"]],
        ]),
      ),
    ).toEqual([["a.ts", "b.ts"]]);
    expect(brokenRule("fs/secure-dir.ts", "manager/index.ts", true)).toBe("an import that runs upward");
    expect(brokenRule("session/load.ts", "node:fs", false)).toBeDefined();
    expect(brokenRule("storage/managed-storage.ts", "native/index.ts", true)).toBeDefined();
    expect(brokenRule("cli/main.ts", "manager/index.ts", true)).toBeDefined();
    expect(brokenRule("history/store.ts", "scope/resolve.ts", true)).toBeDefined();
    expect(brokenRule("manager/discovery.ts", "#binding", false)).toBeDefined();
  });
});
