/**
 * BlobStore over every storage: content addressing, durability before the reference is
 * written, hash-checked reads, corruption detection and repair, and the strict reference
 * grammar; plus a round trip of the inline-image peer fixture.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { BlobStore } from "../../src/index.js";
import { externalizeImageBlobs, resolveBlobRefs } from "../../src/session/index.js";
import { digestOf } from "../../src/storage/index.js";
import { STORAGE_KINDS, asyncCodeOf, codeOf, makeStorage, type StorageFixture } from "./storages.js";

const fixtureFile = path.resolve(
  import.meta.dirname,
  "..",
  "fixtures",
  "peer-sessions",
  "pi-mono__compact-root__v1-inline-image-excerpt.jsonl",
);

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe.each(STORAGE_KINDS)("BlobStore on %s storage", (kind) => {
  let fixture: StorageFixture;
  let blobs: BlobStore;
  let dir: string;

  beforeEach(() => {
    fixture = makeStorage(kind);
    dir = path.join(fixture.root, "blobs");
    blobs = new BlobStore(fixture.storage, dir);
  });
  afterEach(() => fixture.cleanup());

  /** Damages a stored blob the way a disk or a careless tool would. */
  function damage(digest: string, bytes: Uint8Array): void {
    if (kind === "memory") fixture.storage.writeTextSync(path.join(dir, digest), bytes);
    else fs.writeFileSync(path.join(dir, digest), bytes);
  }

  it("stores content under its SHA-256 and returns a strict reference", async () => {
    const bytes = Buffer.from("an image, say");
    const put = await blobs.put(bytes);
    expect(put).toEqual({ digest: sha256(bytes), ref: `blob:sha256:${sha256(bytes)}`, status: "created" });
    // Durable and visible when put resolves: the referencing line may be written next.
    expect(fixture.storage.readBytesSync(path.join(dir, put.digest)).equals(bytes)).toBe(true);
    expect((await blobs.get(put.ref)).equals(bytes)).toBe(true);
    expect(blobs.getSync(put.ref).equals(bytes)).toBe(true);
    expect(await blobs.verify(put.ref)).toBe("intact");
    expect(fixture.storage.listFilesSync(dir)).toEqual([put.digest]);
  });

  it("never rewrites an intact blob", async () => {
    const bytes = Buffer.from([1, 2, 3]);
    const first = blobs.putSync(bytes);
    const before = fixture.storage.statSync(path.join(dir, first.digest));
    const second = await blobs.put(bytes);
    expect(second.status).toBe("existing");
    const after = fixture.storage.statSync(path.join(dir, first.digest));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it("detects corruption on read and repairs it on the next put of the same content", async () => {
    const bytes = Buffer.from("original content");
    const { ref, digest } = await blobs.put(bytes);
    damage(digest, Buffer.from("tampered content"));
    expect(await asyncCodeOf(() => blobs.get(ref))).toBe("blob_corrupt");
    expect(codeOf(() => blobs.getSync(ref))).toBe("blob_corrupt");
    expect(await blobs.verify(ref)).toBe("corrupt");
    expect((await blobs.put(bytes)).status).toBe("repaired");
    expect((await blobs.get(ref)).equals(bytes)).toBe(true);
  });

  it("reports a missing blob as not_found / missing", async () => {
    const ref = `blob:sha256:${sha256(Buffer.from("never stored"))}`;
    expect(await asyncCodeOf(() => blobs.get(ref))).toBe("not_found");
    expect(await blobs.verify(ref)).toBe("missing");
  });

  it("accepts only blob:sha256:<64 lowercase hex>", async () => {
    const hex = sha256(Buffer.from("x"));
    for (const bad of [
      `blob:sha256:${hex.toUpperCase()}`,
      `blob:sha256:${hex.slice(1)}`,
      `blob:sha256:${hex}0`,
      ` blob:sha256:${hex}`,
      `blob:sha1:${hex}`,
      hex,
      "blob:sha256:../../../../etc/passwd",
      `blob:sha256:${"g".repeat(64)}`,
    ]) {
      expect(codeOf(() => digestOf(bad))).toBe("invalid_blob_ref");
      expect(await asyncCodeOf(() => blobs.get(bad))).toBe("invalid_blob_ref");
    }
    expect(digestOf(`blob:sha256:${hex}`)).toBe(hex);
  });

  it("round-trips the inline-image peer fixture through externalize and resolve", async () => {
    const entries = fs
      .readFileSync(fixtureFile, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as unknown);
    const pending: Buffer[] = [];
    const externalized = entries.map((entry) => externalizeImageBlobs(entry, (bytes) => pending.push(bytes)));
    expect(pending.length).toBeGreaterThan(0);
    // The bytes are made durable before any line that references them would be written.
    for (const bytes of pending) await blobs.put(bytes);
    const lines = externalized.map((entry) => JSON.stringify(entry));
    expect(lines.join("\n")).toMatch(/"data":"blob:sha256:[0-9a-f]{64}"/);
    expect(lines.join("\n").length).toBeLessThan(entries.map((entry) => JSON.stringify(entry)).join("\n").length);
    const resolved = resolveBlobRefs(
      lines.map((line) => JSON.parse(line) as unknown),
      blobs.lookup(),
    );
    expect(resolved.unresolved).toEqual([]);
    expect(resolved.entries).toEqual(entries);
  });

  it("lets the session layer tell a missing blob from a corrupt one", async () => {
    const entry = {
      type: "message",
      id: "abcd1234",
      message: { role: "user", content: [{ type: "image", data: Buffer.alloc(2048, 7).toString("base64") }] },
    };
    const pending: Buffer[] = [];
    const externalized = externalizeImageBlobs(entry, (bytes) => pending.push(bytes));
    const { digest } = await blobs.put(pending[0] as Buffer);
    damage(digest, Buffer.from("not the image"));
    expect(resolveBlobRefs([externalized], blobs.lookup()).unresolved).toEqual([
      { entryId: "abcd1234", sha256: digest, reason: "digest_mismatch" },
    ]);
    const other = new BlobStore(fixture.storage, path.join(fixture.root, "empty-blobs"));
    expect(resolveBlobRefs([externalized], other.lookup()).unresolved).toEqual([
      { entryId: "abcd1234", sha256: digest, reason: "missing" },
    ]);
  });
});
