import { describe, expect, it } from "vitest";

import { isValidEntryName } from "../../src/fs/index.js";

describe("entry-name rules (pure, checked before any syscall)", () => {
  const badEverywhere = ["", ".", "..", "a/b", "a/", "/a", "a\0b", "x".repeat(256)];
  const goodEverywhere = ["a", "session.jsonl", "..a", ".hidden", "x".repeat(255), "日本語", "a b"];
  // Fine on POSIX, refused under the Windows rules.
  const windowsOnly = [
    "a\\b", "a:b", "a*b", "a?b", 'a"b', "a<b", "a>b", "a|b", "tab\tname", "dot.", "a..", "space ",
    "CON", "con", "Con.txt", "nul.txt", "NUL", "prn", "aux.log", "COM1", "com9.x", "LPT1", "lpt0",
    "COM\u00b9", "lpt\u00b3.txt", "CON .log", "conin$", "CONOUT$",
  ];
  const windowsFine = ["CONSOLE", "com", "lpt10", "nul_", "COMA", "auxiliary.txt", "a.b"];

  it("refuses the universal bad names on both rule sets", () => {
    for (const name of badEverywhere) {
      expect(isValidEntryName(name, "linux"), JSON.stringify(name)).toBe(false);
      expect(isValidEntryName(name, "win32"), JSON.stringify(name)).toBe(false);
    }
  });

  it("accepts ordinary names on both rule sets", () => {
    for (const name of goodEverywhere) {
      expect(isValidEntryName(name, "linux"), name).toBe(true);
      expect(isValidEntryName(name, "win32"), name).toBe(true);
    }
  });

  it("applies reserved DOS names, reserved characters and trailing dot/space only under Windows rules", () => {
    for (const name of windowsOnly) {
      expect(isValidEntryName(name, "linux"), JSON.stringify(name)).toBe(true);
      expect(isValidEntryName(name, "win32"), JSON.stringify(name)).toBe(false);
    }
    for (const name of windowsFine) expect(isValidEntryName(name, "win32"), name).toBe(true);
  });

  it("uses this platform's rules by default", () => {
    expect(isValidEntryName("a:b")).toBe(process.platform !== "win32");
  });
});
