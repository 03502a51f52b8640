// The pure parts of the CLI's output: tree layout (forks indent, chains do not, deep
// chains do not overflow the stack), shortest unique id prefixes, colour rules, columns.
import { describe, expect, it } from "vitest";

import type { FileEntry, SessionTreeNode } from "../../src/index.js";
import { styleFor, table, terminalLine } from "../../src/cli/output.js";
import { renderTree } from "../../src/cli/render.js";
import { uniquePrefixes } from "../../src/cli/sessions-command.js";

const plain = styleFor({ isTTY: false });

function node(id: string, text: string, children: SessionTreeNode[] = [], label?: string): SessionTreeNode {
  const entry = { type: "message", id, parentId: null, timestamp: "t", message: { role: "user", content: text } } as unknown as FileEntry;
  return { entry, children, label };
}

describe("renderTree", () => {
  it("keeps a chain at one indent, draws forks, shows labels and marks only the leaf", () => {
    const tree = [
      node("aaaaaaaa1", "root", [node("bbbbbbbb1", "next", [node("cccccccc1", "left"), node("dddddddd1", "right", [node("eeeeeeee1", "end")])], "mark")]),
    ];
    expect(renderTree(tree, "eeeeeeee1", plain)).toEqual([
      "aaaaaaaa user: root",
      "bbbbbbbb user: next [mark]",
      "├─ cccccccc user: left",
      "└─ dddddddd user: right",
      "   eeeeeeee user: end ◀ leaf",
    ]);
  });

  it("renders a 200,000-entry chain without recursion", () => {
    let current = node("last", "x");
    for (let i = 0; i < 200_000; i++) current = node(`n${i}`, "x", [current]);
    const lines = renderTree([current], "last", plain);
    expect(lines).toHaveLength(200_001);
    expect(lines[200_000]).toMatch(/◀ leaf$/);
  });
});

describe("uniquePrefixes", () => {
  it("gives at least 8 characters, more where ids share a longer prefix, and whole ids to equal ones", () => {
    const ids = ["01a22b0d-3e82-7c71", "01a22b0d-3f0d-7209", "ffff0000-0000", "01a22b0d-3e82-7c71"];
    const out = uniquePrefixes(ids);
    expect(out.get("01a22b0d-3e82-7c71")).toBe("01a22b0d-3e");
    expect(out.get("01a22b0d-3f0d-7209")).toBe("01a22b0d-3f");
    expect(out.get("ffff0000-0000")).toBe("ffff0000");
  });
});

describe("output", () => {
  it("colours only a terminal, and never under a non-empty NO_COLOR", () => {
    expect(terminalLine(styleFor({ isTTY: true }, {}).red("x"))).toBe("\u001b[31mx\u001b[39m");
    expect(styleFor({ isTTY: true }, { NO_COLOR: "" }).enabled).toBe(true);
    expect(styleFor({ isTTY: true }, { NO_COLOR: "1" }).red("x")).toBe("x");
    expect(styleFor({ isTTY: false }, {}).red("x")).toBe("x");
  });

  it("aligns columns by visible width, ignoring colour codes, and never pads the last one", () => {
    const tty = styleFor({ isTTY: true }, {});
    expect(
      table([
        [tty.red("ab"), "x"],
        ["abcd", "y"],
      ]),
    ).toEqual([`${tty.red("ab")}    x`, "abcd  y"]);
    // Widths are those of the sanitized text: an escaped ESC takes four columns.
    expect(
      table([
        ["\u001b", "x"],
        ["abcde", "y"],
      ]).map(terminalLine),
    ).toEqual(["\\x1b   x", "abcde  y"]);
  });
});

describe("one-line text of a huge message", () => {
  it("a 100 MB message renders as one bounded line, from its start", () => {
    const huge = `${"word ".repeat(20)}${"x".repeat(100_000_000)}`;
    const lines = renderTree([node("aaaaaaaa", huge)], null, plain);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThan(200);
    expect(lines[0]).toContain("user: word word");
    expect(lines[0]!.endsWith("…")).toBe(true);
  });

  it("short text is unchanged and a cut never leaves half a surrogate pair", () => {
    expect(renderTree([node("aaaaaaaa", "short  text")], null, plain)[0]).toContain("user: short text");
    const emoji = renderTree([node("aaaaaaaa", "😀".repeat(10_000))], null, plain)[0]!;
    expect(emoji).toMatch(/^aaaaaaaa user: (😀)+…$/u);
  });
});
