/**
 * What the manager does with files it did not write: damaged headers, newer versions,
 * invalid lines, unknown records, older versions, inline images, and a second writer.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { BlobStore, SessionManager, type OpenSessionOptions, type SessionManagerOptions } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { FIXTURES, assistant, codeOfAsync, readRecords, recordingLogger, user } from "./helpers.js";

let tmp: { path: string; remove(): void };
let options: SessionManagerOptions;
let dir: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-manager-compat-");
  dir = path.join(tmp.path, "sessions");
  fs.mkdirSync(dir, { mode: 0o700 });
  options = { terminalId: null, logger: recordingLogger() };
});

const openAt = (file: string, extra: OpenSessionOptions = {}) => SessionManager.open(file, dir, undefined, undefined, undefined, { ...options, ...extra });
afterEach(() => tmp.remove());

function place(name: string, content: string | Buffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content, { mode: 0o600 });
  return file;
}

const HEADER = `{"type":"session","version":5,"id":"s-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}`;
const Q = `{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"q"}}`;
const A = `{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[]}}`;

describe("headers and versions", () => {
  it("moves a file with an invalid header aside, bytes intact, and starts fresh at the path", async () => {
    const damaged = Buffer.from(`{"type":"sesion","id":"x"}\n${Q}\nnot json\n`);
    const file = place("damaged.jsonl", damaged);
    const manager = await openAt(file);
    const moved = manager.getLoadReport().movedAside;
    expect(moved).toMatchObject({ from: file, reason: "not_a_session_header" });
    expect(path.basename(moved!.to)).toMatch(/^damaged\.jsonl\.invalid-\d{4}-\d\d-\d\dT[\d-]+Z$/);
    expect(fs.readFileSync(moved!.to).equals(damaged)).toBe(true);
    expect(fs.existsSync(file)).toBe(false);
    manager.appendMessage(assistant("fresh"));
    await manager.close();
    expect(readRecords(file).map((r) => r.type)).toEqual(["session", "message"]);
    expect(fs.readFileSync(moved!.to).equals(damaged)).toBe(true);
  });

  it("refuses a read-only open of an invalid header without moving anything", async () => {
    const file = place("damaged.jsonl", `[1,2]\n${Q}\n`);
    expect(await codeOfAsync(() => openAt(file, { readOnly: true }))).toBe("invalid_header");
    expect(fs.readdirSync(dir).filter((n) => !n.startsWith("."))).toEqual(["damaged.jsonl"]);
  });

  it.each([
    ["version 6", `{"type":"session","version":6,"id":"s","timestamp":"t"}\n${Q}\n`, "version_too_new"],
    ["version 4.5", `{"type":"session","version":4.5,"id":"s"}\n${Q}\n`, "invalid_version"],
    ['version "5"', `{"type":"session","version":"5","id":"s"}\n${Q}\n`, "invalid_version"],
  ])("refuses %s and leaves the file byte-identical", async (_name, content, code) => {
    const file = place("newer.jsonl", content);
    const before = fs.statSync(file);
    expect(await codeOfAsync(() => openAt(file))).toBe(code);
    expect(await codeOfAsync(() => openAt(file, { readOnly: true }))).toBe(code);
    expect(fs.readFileSync(file, "utf8")).toBe(content);
    const after = fs.statSync(file);
    expect([after.ino, after.size, after.mtimeMs]).toEqual([before.ino, before.size, before.mtimeMs]);
    // The lock was released: a second refusal is the same refusal, not session_busy.
    expect(await codeOfAsync(() => openAt(file))).toBe(code);
  });
});

describe("rewrites keep what they cannot read", () => {
  it("writes invalid lines back verbatim at their positions and keeps unknown records", async () => {
    const invalidUtf8 = Buffer.from([0x7b, 0xff, 0xfe, 0x22, 0x0a]);
    const unknown = `{"type":"future_entry","id":"aaaa0003","parentId":"aaaa0002","timestamp":"t","payload":{"x":[1]}}`;
    const content = Buffer.concat([Buffer.from(`${HEADER}\n${Q}\n{"torn":\n`), invalidUtf8, Buffer.from(`${A}\n${unknown}\n[1]\n`)]);
    const file = place("mixed.jsonl", content);
    const manager = await openAt(file);
    expect(manager.getLoadReport()).toMatchObject({ invalidLines: 3, unknownEntries: 1 });
    manager.applyEntryMessageUpdates([{ ...manager.getEntry("aaaa0001")!, message: { role: "user", content: "edited" } } as never]);
    await manager.rewriteEntries();
    manager.appendMessage(user("after"));
    await manager.close();
    const bytes = fs.readFileSync(file);
    const lines = bytes.toString("latin1").split("\n");
    expect(lines[2]).toBe(`{"torn":`);
    expect(Buffer.from(lines[3]!, "latin1").equals(invalidUtf8.subarray(0, 4))).toBe(true);
    expect(lines[5]).toBe(unknown);
    expect(lines[6]).toBe("[1]");
    expect(lines[1]).toContain("edited");
    expect(JSON.parse(lines[7]!)).toMatchObject({ type: "message", parentId: "aaaa0003" });
  });

  it("keeps a skipped patch and folds applied ones on a migration rewrite", async () => {
    const file = place(
      "patched.jsonl",
      [
        HEADER.replace('"version":5', '"version":4'),
        Q,
        A,
        `{"type":"header_patch","patch":{"title":"T","titleSource":"user"}}`,
        `{"type":"entry_patch","entryId":"nope0000","patch":{"message":{"role":"user"}}}`,
        "",
      ].join("\n"),
    );
    const manager = await openAt(file);
    expect(manager.getLoadReport()).toMatchObject({ migratedFrom: 4, patchesApplied: 1, patchesSkipped: 1 });
    manager.appendCustomEntry("ext");
    await manager.close();
    const records = readRecords(file);
    expect(records[0]).toMatchObject({ version: 5, title: "T", titleSource: "user" });
    expect(records.map((r) => r.type)).toEqual(["session", "message", "message", "entry_patch", "custom"]);
  });
});

describe("migration of the peer fixtures on first persistence", () => {
  it.each(fs.readdirSync(FIXTURES).filter((name) => name.endsWith(".jsonl")))("%s", async (name) => {
    const file = place(name, fs.readFileSync(path.join(FIXTURES, name)));
    const original = fs.readFileSync(file);
    const manager = await openAt(file);
    const context = manager.buildSessionContext();
    const entries = manager.getEntries().length;
    expect(fs.readFileSync(file).equals(original)).toBe(true);
    // The first persistence (an assistant message) rewrites the whole file as v5; the context
    // is the old one plus that message.
    manager.appendMessage(assistant("probe"));
    await manager.close();
    const reopened = await openAt(file, { readOnly: true });
    expect(reopened.getHeader().version).toBe(5);
    expect(reopened.getLoadReport().migratedFrom).toBeNull();
    expect(reopened.getEntries()).toHaveLength(entries + 1);
    expect(reopened.buildSessionContext().messages.slice(0, -1)).toEqual(context.messages);
  });
});

describe("blobs", () => {
  it("externalizes the fixture's inline image and resolves it back on reopen", async () => {
    const agentDir = path.join(tmp.path, "agent");
    const name = "pi-mono__compact-root__v1-inline-image-excerpt.jsonl";
    const file = place(name, fs.readFileSync(path.join(FIXTURES, name)));
    const imageOf = (entries: readonly unknown[]): string => JSON.stringify(entries).match(/"type":"image","data":"([^"]+)"/)![1]!;
    const manager = await openAt(file, { agentDir });
    const base64 = imageOf(manager.getEntries());
    expect(base64.length).toBeGreaterThan(1024);
    manager.appendMessage(assistant("seen"));
    await manager.close();
    const text = fs.readFileSync(file, "utf8");
    expect(text).not.toContain(base64);
    const ref = text.match(/blob:sha256:[0-9a-f]{64}/)![0];
    const blobs = new BlobStore(path.join(agentDir, "blobs"));
    expect((await blobs.getChecked(ref.slice("blob:sha256:".length)))?.toString("base64")).toBe(base64);
    expect(fs.statSync(path.join(agentDir, "blobs", ref.slice(12))).mode & 0o777).toBe(0o600);

    const reopened = await openAt(file, { agentDir, readOnly: true });
    expect(imageOf(reopened.getEntries())).toBe(base64);
    expect(reopened.getLoadReport().unresolvedBlobs).toEqual([]);
    const without = await openAt(file, { readOnly: true, agentDir: path.join(tmp.path, "another-agent") });
    expect(without.getLoadReport().unresolvedBlobs).toMatchObject([{ reason: "missing" }]);
  });
});

describe("one writer, many readers", () => {
  it("a second writer gets session_busy while read-only opens still load", async () => {
    const writer = SessionManager.create("/w", dir, undefined, options);
    writer.appendMessage(assistant("a"));
    await writer.flush();
    const file = writer.getSessionFile()!;
    expect(await codeOfAsync(() => openAt(file))).toBe("session_busy");
    const reader = await openAt(file, { readOnly: true });
    expect(reader.getEntries()).toHaveLength(1);
    writer.appendMessage(user("b"));
    await writer.close();
    const second = await openAt(file);
    expect(second.getEntries()).toHaveLength(2);
    await second.close();
  });
});
