// Opening an older-format session, reading it and closing it leaves the file as it was (main and
// /pi entries): the migration to the current format is held in memory, and the file is rewritten
// on the first call that persists something.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { buildSessionContext, SessionManager } from "../../src/index.js";
import { SessionManager as PiSessionManager } from "../../src/pi/index.js";
import { generateSession } from "../helpers/session-corpus.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, readRecords, user } from "./helpers.js";

const PI_FIXTURE = path.resolve(import.meta.dirname, "..", "fixtures", "pi-sessions", "pi-v3-model-switches.jsonl");

let temp: ReturnType<typeof makeTempDir>;
let dir: string;
beforeEach(() => {
  temp = makeTempDir("gjc-read-no-rewrite-");
  dir = path.join(temp.path, "sessions");
  fs.mkdirSync(dir, { mode: 0o700 });
});
afterEach(() => temp.remove());

/** A v3 session file in `dir`: pi's fixture, or a generated one with branches and compactions. */
function v3File(kind: "fixture" | "generated"): { file: string; text: string } {
  const generated = generateSession({ seed: 31, cwd: temp.path, entries: 400, version: 3, firstPromptChars: 7000 });
  const text = kind === "fixture" ? fs.readFileSync(PI_FIXTURE, "utf8") : generated.text;
  const file = path.join(dir, kind === "fixture" ? "2026-05-01T10-00-00-000Z_019de3a0-5c00-7a2b-8c3d-4e5f60718293.jsonl" : generated.name);
  fs.writeFileSync(file, text, { mode: 0o600 });
  return { file, text };
}

describe.each(["fixture", "generated"] as const)("a v3 session (%s)", (kind) => {
  it("main entry: open, build the context, close: the file is byte-identical and keeps its mtime", async () => {
    const { file, text } = v3File(kind);
    const before = fs.statSync(file);
    const session = await SessionManager.open(file, dir);
    expect(buildSessionContext(session.getEntries(), session.getLeafId()).messages.length).toBeGreaterThan(0);
    expect(session.getHeader().version).toBe(5);
    await session.close();
    expect(fs.readFileSync(file, "utf8")).toBe(text);
    expect(fs.statSync(file).mtimeMs).toBe(before.mtimeMs);
  });

  it("/pi entry: open, build the context, close: the file is byte-identical", async () => {
    const { file, text } = v3File(kind);
    const session = PiSessionManager.open(file, dir);
    expect(session.buildSessionContext().messages.length).toBeGreaterThan(0);
    await session.close();
    expect(fs.readFileSync(file, "utf8")).toBe(text);
  });

  it("the first append rewrites the file in the current format, with every entry and the new one", async () => {
    const { file, text } = v3File(kind);
    const entries = text.split("\n").filter((line) => line.length > 0).length - 1;
    const session = await SessionManager.open(file, dir);
    session.appendMessage(user("one more question"));
    session.appendMessage(assistant("one more answer"));
    await session.close();
    const records = readRecords(file);
    expect(records[0]).toMatchObject({ type: "session", version: 5 });
    expect(records).toHaveLength(entries + 3);
  });
});

it("a changed payload is still written at close (a change, not a migration)", async () => {
  const { file } = v3File("fixture");
  const session = await SessionManager.open(file, dir);
  const target = session.getEntries().find((entry) => entry.type === "message" && (entry.message as { role: string }).role === "user");
  expect(target).toBeDefined();
  session.applyEntryMessageUpdates([{ ...target!, message: user("pruned") } as typeof target & object]);
  await session.close();
  const records = readRecords(file);
  expect(records[0]).toMatchObject({ version: 5 });
  expect(records.find((r) => r.id === target!.id)).toMatchObject({ message: { content: [{ text: "pruned" }] } });
});
