/**
 * The `/gjc` face resumes a long session as the engine does: through the line index, reading the
 * context's lines and not the rest of the path. A line far behind the compaction is changed in
 * place after the index was written; a resume that read it would fail `session_changed`.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, expect, it } from "vitest";

import { SessionManager, getSessionMessageEntryId, sessionReadAccess } from "../../src/gjc/index.js";
import { SessionManager as Engine } from "../../src/index.js";
import { codeOfAsync } from "../manager/helpers.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let file: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-resume-reads-");
  file = path.join(tmp.path, "long.jsonl");
});
afterEach(() => tmp.remove());

const quiet = { error() {} };
const id = (i: number) => `m${String(i).padStart(6, "0")}`;

/** A chain of `count` messages with a compaction at `compactAt` keeping the last five before it. */
function writeLong(count: number, compactAt: number): void {
  const lines = [JSON.stringify({ type: "session", version: 5, id: "long", timestamp: "2026-01-01T00:00:00.000Z", cwd: tmp.path })];
  for (let i = 0; i < count; i++) {
    const base = { id: id(i), parentId: i === 0 ? null : id(i - 1), timestamp: "2026-01-01T00:00:00.000Z" };
    if (i === compactAt) lines.push(JSON.stringify({ type: "compaction", ...base, summary: "so far", firstKeptEntryId: id(i - 5), tokensBefore: 9 }));
    else {
      const message =
        i % 2 === 0
          ? { role: "user", content: `question ${i}`, timestamp: i }
          : { role: "assistant", provider: "p", model: "m", content: [{ type: "text", text: `answer ${i}` }], timestamp: i };
      lines.push(JSON.stringify({ type: "message", ...base, message }));
    }
  }
  fs.writeFileSync(file, lines.join("\n") + "\n", { mode: 0o600 });
}

it("reads only the context's lines: a changed line behind the compaction shows only when the whole file is read", async () => {
  writeLong(3000, 2990);
  // A writer's open and close writes the index.
  await (await Engine.open(file, tmp.path, undefined, undefined, undefined, { terminalId: null, logger: quiet })).close();
  const text = fs.readFileSync(file, "utf8");
  fs.writeFileSync(file, text.replace("question 100", "QUESTION 100"), { mode: 0o600 });

  const options = { terminalId: null, logger: quiet, readOnly: true };
  const face = await SessionManager.open(file, tmp.path, undefined, undefined, undefined, options);
  const context = face.buildSessionContext();
  // The summary, the five kept messages and the nine after the compaction, each linked to its entry.
  expect(context.messages).toHaveLength(1 + 5 + 9);
  expect(context.messages.slice(1).map((message) => getSessionMessageEntryId(message))).toEqual(
    [...Array(14).keys()].map((k) => id(2985 + k + (k >= 5 ? 1 : 0))),
  );
  expect(sessionReadAccess(face).getSessionContext().messages).toHaveLength(15);
  expect(await codeOfAsync(() => face.getEntries())).toBe("session_changed");
  await face.close();
});
