/**
 * Provider image data URLs through a real session file (issue 28): a 2 MB screenshot in an assistant message's provider
 * payload and a diagram in a custom message's details are stored as blobs before the lines referring to them, so the
 * 500,000-character cut of persistence never reaches them; they come back byte for byte through the full load, the
 * indexed open and a rewrite, and a missing blob is reported, its reference kept.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { BlobStore, SessionManager, type FileEntry } from "../../src/index.js";
import { persistedLineText } from "../../src/manager/lines.js";
import { MAX_PERSIST_CHARS, PERSIST_TRUNCATION_NOTICE, sanitizeForPersistence } from "../../src/session/index.js";
import { pngBytes, pngDataUrl } from "../helpers/images.js";
import { makeTempDir } from "../helpers/temp.js";
import { recordingLogger, user } from "./helpers.js";
import { sidecarOf } from "./line-index-helpers.js";

const screenshot = pngDataUrl(2 * 1024 * 1024, 11);
const diagram = pngDataUrl(1536 * 1024, 12);
const photo = pngBytes(1024 * 1024, 13).toString("base64");

let tmp: ReturnType<typeof makeTempDir>;
let dir: string;
let agentDir: string;
let file: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-image-urls-");
  dir = path.join(tmp.path, "sessions");
  agentDir = path.join(tmp.path, "agent");
  fs.mkdirSync(dir, { mode: 0o700 });
  file = path.join(dir, "2026-05-01T10-00-00-000Z_019de3a0-5c00-7a2b-8c3d-4e5f6071a001.jsonl");
});
afterEach(() => tmp.remove());

const options = () => ({ terminalId: null, agentDir, logger: recordingLogger() });
const openAt = (readOnly: boolean) => SessionManager.open(file, dir, undefined, undefined, undefined, { ...options(), readOnly });

function assistantWithImages(text: string) {
  return {
    role: "assistant" as const,
    provider: "openai",
    model: "gpt-5.4",
    content: [{ type: "text", text }],
    providerPayload: {
      type: "openaiResponsesHistory",
      provider: "openai",
      items: [
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: "why does the build fail?" },
            { type: "input_image", detail: "auto", image_url: screenshot },
          ],
        },
        { type: "message", role: "user", content: [{ type: "input_image", image_url: { url: diagram, detail: "high" } }] },
      ],
    },
    timestamp: 2,
  };
}

/** Writes the session: a prompt with a 1 MB image block, the assistant's payload, a custom message, more turns. */
async function writeSession(): Promise<void> {
  const session = await SessionManager.open(file, dir, undefined, undefined, undefined, options());
  session.appendMessage({
    role: "user",
    content: [
      { type: "text", text: "here is the failing screen" },
      { type: "image", data: photo, mimeType: "image/png" },
    ],
    timestamp: 1,
  });
  session.appendMessage(assistantWithImages("The linker cannot find libssl."));
  session.appendCustomMessageEntry("preview", "rendered the architecture diagram", true, {
    frames: [{ caption: "layers", image: { image_url: { url: diagram } } }],
  });
  for (let turn = 0; turn < 20; turn++) {
    session.appendMessage(user(`follow-up ${turn}: ${"context ".repeat(200)}`));
    session.appendMessage({
      role: "assistant",
      provider: "openai",
      model: "gpt-5.4",
      content: [{ type: "text", text: `answer ${turn}` }],
      timestamp: 3 + turn,
    });
  }
  await session.close();
}

const blobsDir = () => path.join(agentDir, "blobs");
const imagesOf = (entries: readonly FileEntry[]): string[] =>
  [...JSON.stringify(entries).matchAll(/"(data:image\/[^"]*|blob:sha256:[0-9a-f]{64})"/g)].map((m) => m[1]!);
const photoOf = (entries: readonly FileEntry[]): string | undefined => /"type":"image","data":"([^"]+)"/.exec(JSON.stringify(entries))?.[1];

function expectIntact(manager: SessionManager): void {
  const entries = manager.getEntries();
  expect(imagesOf(entries)).toEqual([screenshot, diagram, diagram]);
  expect(photoOf(entries)).toBe(photo);
  expect(manager.getLoadReport().unresolvedBlobs).toEqual([]);
  expect(JSON.stringify(manager.buildSessionContext().messages)).toContain(screenshot);
}

function expectReferencesOnDisk(): string[] {
  const text = fs.readFileSync(file, "utf8");
  expect(text).not.toContain("data:image/");
  expect(text).not.toContain(PERSIST_TRUNCATION_NOTICE);
  expect(Math.max(...text.split("\n").map((line) => line.length))).toBeLessThan(8000);
  const refs = [...text.matchAll(/blob:sha256:([0-9a-f]{64})/g)].map((m) => m[1]!);
  expect(refs).toHaveLength(4);
  return refs;
}

describe("image data URLs in a session file", () => {
  it("are blobs (owner-only, the URL's UTF-8) named by the lines, and load back byte for byte through the full load and the index", async () => {
    await writeSession();
    const [photoRef, screenshotRef, diagramRef, customRef] = expectReferencesOnDisk();
    expect(customRef).toBe(diagramRef);
    const store = new BlobStore(blobsDir());
    expect((await store.getChecked(photoRef!))?.toString("base64")).toBe(photo);
    expect((await store.getChecked(screenshotRef!))?.toString("utf8")).toBe(screenshot);
    expect((await store.getChecked(diagramRef!))?.toString("utf8")).toBe(diagram);
    store.close();
    expect(fs.statSync(blobsDir()).mode & 0o777).toBe(0o700);
    for (const ref of [photoRef, screenshotRef, diagramRef]) {
      const stat = fs.statSync(path.join(blobsDir(), ref!));
      expect(stat.mode & 0o777).toBe(0o600);
      expect(stat.uid).toBe(process.getuid!());
    }

    fs.rmSync(sidecarOf(file), { force: true });
    const full = await openAt(true);
    expect(full.getLoadReport().lineIndex).not.toBe("used");
    expectIntact(full);
    await full.close();
    await (await openAt(false)).close();
    const indexed = await openAt(true);
    expect(indexed.getLoadReport().lineIndex).toBe("used");
    expectIntact(indexed);
    await indexed.close();
  });

  it("each blob is stored before the first line that names it is written", async () => {
    const seen: { hash: string; fileHeldIt: boolean }[] = [];
    class WatchedStore extends BlobStore {
      override putSync(data: Uint8Array) {
        const hash = createHash("sha256").update(data).digest("hex");
        seen.push({ hash, fileHeldIt: fs.existsSync(file) && fs.readFileSync(file, "utf8").includes(hash) });
        return super.putSync(data);
      }
    }
    const session = SessionManager.create(tmp.path, dir, undefined, { ...options(), blobStore: new WatchedStore(blobsDir()) });
    session.appendMessage({ role: "user", content: "see the payload", timestamp: 1 });
    session.appendMessage(assistantWithImages("first"));
    session.appendCustomMessageEntry("preview", "diagram", true, { image_url: { url: pngDataUrl(600 * 1024, 21) } });
    file = session.getSessionFile()!;
    await session.close();
    expect(seen).toHaveLength(3);
    expect(seen.filter((put) => put.fileHeldIt)).toEqual([]);
    const text = fs.readFileSync(file, "utf8");
    for (const { hash } of seen) expect(text).toContain(`blob:sha256:${hash}`);
  });

  it("stay blobs through applyEntryMessageUpdates, applyCustomMessageEntryUpdates and rewriteEntries", async () => {
    await writeSession();
    await (await openAt(false)).close();
    const session = await openAt(false);
    const entries = session.getEntries();
    const answer = entries.find((entry) => entry.type === "message" && (entry as { message: { role: string } }).message.role === "assistant")!;
    const custom = entries.find((entry) => entry.type === "custom_message")!;
    session.applyEntryMessageUpdates([{ ...answer, message: assistantWithImages("The linker cannot find libssl; install libssl-dev.") } as FileEntry]);
    session.applyCustomMessageEntryUpdates([
      { ...custom, content: "rendered again", details: { frames: [{ image: { image_url: { url: diagram } } }, { image_url: screenshot }] } } as FileEntry,
    ]);
    await session.rewriteEntries();
    await session.close();

    const text = fs.readFileSync(file, "utf8");
    expect(text).toContain("install libssl-dev");
    expect(text).not.toContain("data:image/");
    expect([...text.matchAll(/blob:sha256:/g)]).toHaveLength(5);
    for (const readOnly of [true, false]) {
      const reopened = await openAt(readOnly);
      expect(imagesOf(reopened.getEntries())).toEqual([screenshot, diagram, diagram, screenshot]);
      expect(photoOf(reopened.getEntries())).toBe(photo);
      expect(reopened.getLoadReport().unresolvedBlobs).toEqual([]);
      await reopened.close();
    }
  });

  it("a missing blob is reported by both load paths and its reference kept; the rest still resolves", async () => {
    await writeSession();
    const [, screenshotRef] = expectReferencesOnDisk();
    fs.unlinkSync(path.join(blobsDir(), screenshotRef!));
    const answerId = JSON.parse(
      fs
        .readFileSync(file, "utf8")
        .split("\n")
        .find((line) => line.includes(screenshotRef!))!,
    ).id as string;
    fs.rmSync(sidecarOf(file), { force: true });
    for (const write of [false, true]) {
      if (write) await (await openAt(false)).close();
      const opened = await openAt(true);
      expect(opened.getLoadReport().lineIndex === "used").toBe(write);
      const entries = opened.getEntries();
      expect(opened.getLoadReport().unresolvedBlobs).toEqual([{ entryId: answerId, sha256: screenshotRef, reason: "missing" }]);
      expect(imagesOf(entries)).toEqual([`blob:sha256:${screenshotRef}`, diagram, diagram]);
      expect(photoOf(entries)).toBe(photo);
      await opened.close();
    }
  });
});

describe("without a blob sink", () => {
  it("an entry is written as before: sanitized, so a URL past the limit is cut", () => {
    const entry = {
      type: "message",
      id: "asst0009",
      parentId: null,
      timestamp: "2026-05-01T10:00:00.000Z",
      message: assistantWithImages("no sink"),
    } as unknown as FileEntry;
    const text = persistedLineText({ kind: "entry", entry }, undefined);
    expect(text).toBe(JSON.stringify(sanitizeForPersistence(entry)));
    expect(text).toContain(`"image_url":"${screenshot.slice(0, MAX_PERSIST_CHARS - PERSIST_TRUNCATION_NOTICE.length - 2)}`);
    expect(text).toContain(PERSIST_TRUNCATION_NOTICE);
  });
});
