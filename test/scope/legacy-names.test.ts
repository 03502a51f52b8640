import { describe, expect, it } from "vitest";

import { legacyDirectoryNames } from "../../src/index.js";
import { discoveredLegacyDirectories, MAX_DISCOVERED_LEGACY_DIRECTORIES } from "../../src/scope/legacy-names.js";

const anchors = { home: "/home/u", tmp: "/tmp" };

describe("legacyDirectoryNames", () => {
  it("encodes the canonical and the lexical cwd absolutely", () => {
    const names = legacyDirectoryNames({ canonicalCwd: "/srv/a/b-c", legacyLexicalCwd: "/link/a" }, anchors);
    expect(names).toEqual(["--srv-a-b-c--", "--link-a--"]);
  });

  it("adds the home-relative variants", () => {
    expect(legacyDirectoryNames({ canonicalCwd: "/home/u/p/q", legacyLexicalCwd: "/home/u/p/q" }, anchors)).toEqual([
      "--home-u-p-q--",
      "-p-q",
      "---p-q--",
      "---home-u-p-q--",
    ]);
    expect(legacyDirectoryNames({ canonicalCwd: "/home/u", legacyLexicalCwd: "/home/u" }, anchors)).toEqual(["--home-u--", "-", "----", "---home-u--"]);
  });

  it("adds the temp-relative variants", () => {
    expect(legacyDirectoryNames({ canonicalCwd: "/tmp/x/y", legacyLexicalCwd: "/tmp/x/y" }, anchors)).toEqual(["--tmp-x-y--", "-tmp-x-y", "---tmp-x-y--"]);
    expect(legacyDirectoryNames({ canonicalCwd: "/tmp", legacyLexicalCwd: "/tmp" }, anchors)).toEqual(["--tmp--", "-tmp", "---tmp--"]);
  });

  it("prefers the canonical home when given", () => {
    const names = legacyDirectoryNames(
      { canonicalCwd: "/private/home/u/p", legacyLexicalCwd: "/private/home/u/p" },
      { ...anchors, canonicalHome: "/private/home/u" },
    );
    expect(names).toContain("-p");
    expect(names).toContain("---private-home-u-p--");
  });

  it("maps backslashes and colons too (Windows spellings)", () => {
    expect(legacyDirectoryNames({ canonicalCwd: "C:\\gjc\\p", legacyLexicalCwd: "C:\\gjc\\p" }, anchors)[0]).toBe("--C--gjc-p--");
  });
});

describe("discoveredLegacyDirectories", () => {
  it("keeps unknown '-'-prefixed names, sorted, at most 256, never v2 or internal", () => {
    const entries = [
      "v2-abc",
      "-b",
      "-a",
      "x",
      ".gjc-managed-session-internal",
      "--known--",
      ...Array.from({ length: 300 }, (_, i) => `-z${String(i).padStart(3, "0")}`),
    ];
    const found = discoveredLegacyDirectories(entries, ["--known--"]);
    expect(found).toHaveLength(MAX_DISCOVERED_LEGACY_DIRECTORIES);
    expect(found.slice(0, 2)).toEqual(["-a", "-b"]);
    expect(found).not.toContain("--known--");
    expect(found).not.toContain("x");
  });
});
