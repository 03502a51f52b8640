// The README's one error-code table matches the code in both directions: every code an error
// class of src/ can carry has a row naming that class, and every row names only codes and
// classes that exist. The codes are read from the sources by the TypeScript checker: for each
// class derived from GjcError, the string literals of its `code` property's type (plus any
// literal handed to `new GjcError(...)` directly), so a new class or code is found without
// being listed here.
import path from "node:path";

import ts from "typescript";
import { describe, expect, it } from "vitest";

import { readmeErrorTable } from "./helpers/readme.js";
import { REPO_ROOT } from "./helpers/processes.js";

// The compiler names files with forward slashes on every platform.
const SRC = `${path.join(REPO_ROOT, "src").split(path.sep).join("/")}/`;
const ROOT_CLASS = "GjcError";

/** code -> the classes that can carry it, and the classes whose code type is not a closed union. */
function codesInSource(): { codes: Map<string, Set<string>>; open: string[] } {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(REPO_ROOT, "tsconfig.build.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  );
  if (parsed === undefined) throw new Error("tsconfig.build.json did not parse");
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
  const checker = program.getTypeChecker();
  const codes = new Map<string, Set<string>>();
  const open: string[] = [];
  const add = (code: string, cls: string) => {
    let set = codes.get(code);
    if (set === undefined) codes.set(code, (set = new Set()));
    set.add(cls);
  };
  // A base may be no class or interface (an interface merged into a class can extend a `Pick<...>`): only those recurse.
  const derivesFromRoot = (type: ts.Type): boolean =>
    (checker.getBaseTypes(type as ts.InterfaceType) ?? []).some(
      (base) => base.getSymbol()?.getName() === ROOT_CLASS || (base.isClassOrInterface() && derivesFromRoot(base)),
    );

  for (const file of program.getSourceFiles()) {
    if (!file.fileName.startsWith(SRC)) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isClassDeclaration(node) && node.name !== undefined) {
        const type = checker.getTypeAtLocation(node.name);
        if (derivesFromRoot(type)) {
          const code = type.getProperty("code");
          const codeType = code === undefined ? undefined : checker.getTypeOfSymbolAtLocation(code, node);
          const members = codeType === undefined ? [] : codeType.isUnion() ? codeType.types : [codeType];
          if (members.length === 0 || !members.every((m) => m.isStringLiteral())) open.push(node.name.text);
          for (const m of members) if (m.isStringLiteral()) add(m.value, node.name.text);
        }
      }
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === ROOT_CLASS) {
        const first = node.arguments?.[0];
        if (first !== undefined && ts.isStringLiteralLike(first)) add(first.text, ROOT_CLASS);
        else open.push(`new ${ROOT_CLASS}(...) in ${path.relative(REPO_ROOT, file.fileName)}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return { codes, open };
}

describe("README documents every error code in one table", () => {
  const source = codesInSource();
  const rows = readmeErrorTable();

  it("every error class has a closed set of literal codes", () => {
    expect(source.open).toEqual([]);
    expect(source.codes.size).toBeGreaterThan(50);
  });

  it("has the table, one row per code", () => {
    expect(rows, 'README has no "## Error codes" table').toBeDefined();
    const seen = (rows ?? []).map((r) => r.code);
    expect(seen.filter((c, i) => seen.indexOf(c) !== i)).toEqual([]);
    for (const row of rows ?? []) expect(row.meaning.length, row.code).toBeGreaterThan(0);
  });

  it("every code an error class can carry has a row naming that class", () => {
    const table = new Map((rows ?? []).map((r) => [r.code, new Set(r.classes)]));
    const missing: string[] = [];
    for (const [code, classes] of source.codes) {
      for (const cls of classes) if (!table.get(code)?.has(cls)) missing.push(`${code} (${cls})`);
    }
    expect(missing.sort()).toEqual([]);
  });

  it("no row names a code or a class that does not carry it (no stale rows)", () => {
    const stale: string[] = [];
    for (const row of rows ?? []) {
      const classes = source.codes.get(row.code);
      if (classes === undefined) stale.push(row.code);
      else for (const cls of row.classes) if (!classes.has(cls)) stale.push(`${row.code} (${cls})`);
      if (row.classes.length === 0) stale.push(`${row.code} (no class named)`);
    }
    expect(stale.sort()).toEqual([]);
  });
});
