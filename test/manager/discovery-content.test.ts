/**
 * What one file's listing entry says, and what was read to learn it: the prefix fields, the
 * forward scan of the rest (every message; late `header_patch` records in v4/v5 files), and the
 * bounds on every read.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { FileSessionStorage, NO_MESSAGES, listSessions, type SessionInfo } from "../../src/index.js";
import { MAX_PATCH_LINE_BYTES, REST_CHUNK_BYTES, SESSION_LIST_PREFIX_BYTES } from "../../src/manager/index.js";
import { summarizePrefix } from "../../src/manager/session-info.js";
import { makeTempDir } from "../helpers/temp.js";
import { countingStorage, filler, header, headerPatch, line, message } from "./discovery-fixtures.js";

let temp: ReturnType<typeof makeTempDir>;
beforeEach(() => {
  temp = makeTempDir("gjc-discovery-");
});
afterEach(() => temp.remove());

/** Lists a directory holding only `content` and returns its entry and the reads made. */
async function listOne(content: string | Buffer): Promise<{ info: SessionInfo; log: ReturnType<typeof countingStorage>["log"] }> {
  fs.writeFileSync(path.join(temp.path, "s.jsonl"), content);
  const { storage, log } = countingStorage(new FileSessionStorage(temp.path));
  const listing = await listSessions(temp.path, { storage, cache: false });
  expect(listing.skipped).toEqual([]);
  expect(listing.sessions).toHaveLength(1);
  return { info: listing.sessions[0]!, log };
}

describe("late header_patch records (v4/v5)", () => {
  it("finds a title patch far past the prefix and more than one chunk before the end, reading the rest once in bounded chunks", async () => {
    const content =
      header({ id: "big", version: 5, cwd: "/old" }) +
      headerPatch({ title: "early title", titleSource: "auto" }) +
      message("user", "first question") +
      filler(200_000) +
      headerPatch({ cwd: "/moved" }) +
      filler(50_000) +
      headerPatch({ title: "renamed", titleSource: "user" }) +
      filler(REST_CHUNK_BYTES + 10_000);
    const { info, log } = await listOne(content);
    expect(info).toMatchObject({ title: "renamed", cwd: "/moved", displayName: "renamed", firstMessage: "first question" });
    expect(log.prefixes).toEqual([{ path: info.path, maxBytes: SESSION_LIST_PREFIX_BYTES }]);
    expect(log.tails.length).toBeGreaterThanOrEqual(2);
    for (const read of log.tails) expect(read.maxBytes).toBeLessThanOrEqual(REST_CHUNK_BYTES);
    // Each byte after the prefix's whole lines is read once (and a few before the resume point again).
    const total = log.tails.reduce((sum, read) => sum + read.got, 0);
    expect(total).toBeLessThanOrEqual(content.length);
  });

  it("parses a patch line cut by a chunk boundary", async () => {
    // Chunks start where the prefix's whole lines end: put the first and the second chunk boundary mid-patch.
    for (const chunks of [1, 2]) {
      const head = header({ id: "cut", version: 4 });
      const patch = headerPatch({ title: `across ${chunks}` });
      // One message line sized so that the chunk boundary falls mid-patch.
      const bare = message("assistant", "").length;
      const before = message("assistant", "y".repeat(chunks * REST_CHUNK_BYTES - Math.floor(patch.length / 2) - bare));
      const content = head + before + patch + filler(20_000);
      const boundary = head.length + chunks * REST_CHUNK_BYTES;
      const patchAt = content.indexOf(patch);
      expect(boundary > patchAt && boundary < patchAt + patch.length).toBe(true);
      const { info } = await listOne(content);
      expect(info.title).toBe(`across ${chunks}`);
      fs.rmSync(path.join(temp.path, "s.jsonl"));
    }
  });

  it("scans to the end of the prefix, never re-reading it, when nothing late is found", async () => {
    const content = header({ id: "plain", version: 5, cwd: "/w" }) + headerPatch({ title: "in the prefix" }) + filler(150_000);
    const { info, log } = await listOne(content);
    expect(info).toMatchObject({ title: "in the prefix", cwd: "/w" });
    const lowest = Math.min(...log.tails.map((read) => (read.end ?? content.length) - read.got));
    expect(lowest).toBeGreaterThan(0);
    expect(lowest).toBeLessThan(SESSION_LIST_PREFIX_BYTES);
    const total = log.tails.reduce((sum, read) => sum + read.got, 0);
    expect(total).toBeLessThanOrEqual(content.length);
  });

  it("takes the latest of several patches in one chunk, including records glued on one line", async () => {
    const glued = headerPatch({ title: "glued first" }).trimEnd() + headerPatch({ title: "glued last", cwd: "/glued" });
    const content =
      header({ id: "many", version: 5, cwd: "/w" }) +
      filler(100_000) +
      headerPatch({ title: "older", cwd: "/older" }) +
      message("user", "between") +
      headerPatch({ title: "newer" }) +
      message("user", "between") +
      headerPatch({ title: "newest" }) +
      filler(1_000);
    expect((await listOne(content)).info).toMatchObject({ title: "newest", cwd: "/older" });
    fs.rmSync(path.join(temp.path, "s.jsonl"));
    expect((await listOne(content + glued)).info).toMatchObject({ title: "glued last", cwd: "/glued" });
  });

  it("finds title and cwd patches that are the file's last line", async () => {
    const content = header({ id: "recent", version: 5 }) + filler(300_000) + headerPatch({ cwd: "/c", title: "t" });
    const { info } = await listOne(content);
    expect(info).toMatchObject({ title: "t", cwd: "/c" });
  });

  it("ignores patch-looking text in over-long lines and invalid patches, keeping an earlier valid one", async () => {
    const content =
      header({ id: "noisy", version: 5 }) +
      filler(10_000) +
      headerPatch({ title: "valid" }) +
      filler(10_000) +
      line({ type: "header_patch", patch: { title: 7 } }) +
      line({ type: "header_patch", patch: { title: "extra key", colour: "red" } }) +
      message("user", `talking about "header_patch" ${"z".repeat(MAX_PATCH_LINE_BYTES * 2)}`) +
      line({ type: "header_patch", patch: { title: "x".repeat(MAX_PATCH_LINE_BYTES * 2) } }) +
      filler(2_000);
    const { info, log } = await listOne(content);
    expect(info.title).toBe("valid");
    for (const read of log.tails) expect(read.got).toBeLessThanOrEqual(REST_CHUNK_BYTES);
  });

  it("does not apply patch records of v1-v3 files (their messages are still counted)", async () => {
    for (const version of [undefined, 2, 3]) {
      const content =
        header({ id: `v${version ?? 1}`, ...(version === undefined ? {} : { version }), title: "from header" }) +
        headerPatch({ title: "ignored in prefix" }) +
        filler(80_000) +
        headerPatch({ title: "ignored late" });
      const { info } = await listOne(content);
      expect(info.title).toBe("from header");
      expect(info.version).toBe(version ?? 1);
      expect(info.messageCount).toBe((content.match(/"type":"message"/g) ?? []).length);
    }
  });
});

describe("prefix fields", () => {
  it("counts messages exactly in a small file and in a large one, the line the prefix cuts included", async () => {
    const small =
      header({ id: "small", version: 5 }) +
      message("user", "a") +
      message("assistant", "b") +
      line({ type: "label", id: "l", parentId: null, timestamp: "t", targetId: "x" });
    expect((await listOne(small)).info).toMatchObject({ messageCount: 2, messageCountIsEstimate: false, size: small.length });

    let large = header({ id: "large", version: 3 });
    while (large.length < SESSION_LIST_PREFIX_BYTES - 300) large += message("user", "q".repeat(100));
    large += message("assistant", "r".repeat(600)) + filler(20_000);
    const inPrefix = large.slice(0, SESSION_LIST_PREFIX_BYTES);
    expect(inPrefix.endsWith("\n")).toBe(false);
    const { info } = await listOne(large);
    expect(info.messageCountIsEstimate).toBe(false);
    expect(info.messageCount).toBe((large.match(/"type":"message"/g) ?? []).length);
  });

  it("takes a first prompt longer than the prefix whole and counts every message after it", async () => {
    const prompt = `Here is the file:\n${"const answer = compute(input);\n".repeat(250)}`;
    let content = header({ id: "pasted", version: 3 }) + message("user", prompt);
    for (let i = 0; i < 39; i++) content += message(i % 2 === 0 ? "assistant" : "user", `turn ${i}`);
    const { info } = await listOne(content);
    expect(prompt.length).toBeGreaterThan(6000);
    expect(info).toMatchObject({ firstMessage: prompt, messageCount: 40, messageCountIsEstimate: false });
    expect(info.displayName.startsWith("Here is the file: const answer")).toBe(true);
    expect(info.allMessagesText).toContain(prompt);
  });

  it("takes the first user message, falls back to (no messages), and builds a display name", async () => {
    const withUser =
      header({ id: "u", version: 5, timestamp: "2026-03-04T05:06:07.000Z" }) +
      message("assistant", "assistant first") +
      line({ type: "message", id: "m", parentId: null, timestamp: "t", message: { role: "user", content: "plain\nstring\u001b[31m content" } });
    const first = (await listOne(withUser)).info;
    expect(first.firstMessage).toBe("plain\nstring\u001b[31m content");
    expect(first.displayName).toBe("plain string [31m content");
    expect(first.allMessagesText).toBe("assistant first plain\nstring\u001b[31m content");

    const none = header({ id: "n", version: 5, timestamp: "2026-03-04T05:06:07.000Z" });
    const info = (await listOne(none)).info;
    expect(info.firstMessage).toBe(NO_MESSAGES);
    const created = new Date("2026-03-04T05:06:07.000Z");
    const hhmm = `${String(created.getHours()).padStart(2, "0")}:${String(created.getMinutes()).padStart(2, "0")}`;
    expect(info.displayName).toBe(`Untitled · ${hhmm}`);
  });

  it("uses the last compaction short summary as a title fallback, and keeps parentSession", async () => {
    const content =
      header({ id: "c", version: 5, parentSession: "/s/parent.jsonl" }) +
      line({ type: "compaction", id: "c1", parentId: null, timestamp: "t", summary: "s", shortSummary: "first summary", tokensBefore: 1 }) +
      line({ type: "compaction", id: "c2", parentId: "c1", timestamp: "t", summary: "s", shortSummary: "second summary", tokensBefore: 1 });
    const { info } = await listOne(content);
    expect(info).toMatchObject({ title: "second summary", parentSession: "/s/parent.jsonl", cwd: "" });
  });

  it("falls back to the mtime when the header has no usable timestamp", async () => {
    const { info } = await listOne(header({ id: "t", version: 5, timestamp: "not a date" }));
    expect(info.created.getTime()).toBe(info.modified.getTime());
  });

  it("reads CRLF files, a byte order mark, and garbage lines before the header", async () => {
    const crlf = (header({ id: "crlf", version: 5, cwd: "/w" }) + message("user", "hi")).replaceAll("\n", "\r\n");
    expect((await listOne(`\ufeff${crlf}`)).info).toMatchObject({ id: "crlf", cwd: "/w", firstMessage: "hi", messageCount: 1 });
    expect((await listOne(`not json\n${header({ id: "after-garbage" })}`)).info.id).toBe("after-garbage");
  });

  it("reads the header fields from a first line longer than the prefix", async () => {
    const content = header({ id: "long", version: 5, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w", title: "t".repeat(6000) }) + filler(5_000);
    const { info } = await listOne(content);
    expect(info).toMatchObject({ id: "long", cwd: "/w", version: 5 });
    // The cut title is not shown half; the rest of the header is.
    expect(info.title).toBeUndefined();
    expect(summarizePrefix(content.slice(0, SESSION_LIST_PREFIX_BYTES), false)).toMatchObject({ kind: "session", parsedBytes: 0 });
  });

  it("never takes a record from a cut last line", () => {
    const cut = header({ id: "cut", version: 5 }) + '{"type":"header_patch","patch":{"title":"torn"}';
    expect(summarizePrefix(cut, false)).toMatchObject({ kind: "session", title: undefined });
    expect(summarizePrefix(`${cut}}`, true)).toMatchObject({ kind: "session", title: "torn" });
  });
});
