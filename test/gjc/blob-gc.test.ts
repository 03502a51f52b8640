/**
 * The blob maintenance of the `/gjc` entry on a real blob directory: reference scanning, the
 * canonical listing (and what it leaves out), and removal bound to the listed file, with a
 * file swapped in, a veto, a vanished blob, and the directory refused when it is not owner-only.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { BlobStore, SecureFsError } from "../../src/index.js";
import { BLOB_REFERENCE_MAX_LENGTH, collectBlobReferences, listCanonicalBlobs, removeCanonicalBlob } from "../../src/gjc/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let dir: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-blob-gc-");
  dir = path.join(tmp.path, "blobs");
});
afterEach(() => tmp.remove());

const image = (seed: number): Buffer => crypto.createHash("sha512").update(String(seed)).digest();

describe("blob references", () => {
  it("collects the hash of every reference in a transcript line, once each, and the carry-over length fits one", () => {
    const a = "a".repeat(64);
    const b = "0123456789abcdef".repeat(4);
    const line = JSON.stringify({
      type: "message",
      message: {
        content: [
          { type: "image", data: `blob:sha256:${a}` },
          { type: "image", data: `blob:sha256:${b}` },
          { text: `blob:sha256:${a} again, and blob:sha256:short` },
        ],
      },
    });
    const found = new Set<string>();
    collectBlobReferences(line, found);
    expect([...found].sort()).toEqual([b, a].sort());
    expect(BLOB_REFERENCE_MAX_LENGTH).toBe(`blob:sha256:${a}`.length);
  });
});

describe("listCanonicalBlobs", () => {
  it("lists the canonical blobs with their identity and leaves everything else out", async () => {
    const store = new BlobStore(dir);
    const puts = await Promise.all([1, 2, 3].map((n) => store.put(image(n))));
    fs.writeFileSync(path.join(dir, ".tmp-upload"), "partial");
    fs.writeFileSync(path.join(dir, "ABCDEF".padEnd(64, "0")), "upper case: not canonical");
    fs.mkdirSync(path.join(dir, "f".repeat(64)));
    fs.symlinkSync(puts[0]!.path, path.join(dir, "e".repeat(64)));
    const linked = await store.put(image(4));
    fs.linkSync(linked.path, path.join(tmp.path, "second-link"));

    const listed = await listCanonicalBlobs(dir);
    expect(listed.map((e) => e.hash).sort()).toEqual(puts.map((p) => p.hash).sort());
    const first = listed.find((e) => e.hash === puts[0]!.hash)!;
    const st = fs.lstatSync(first.path, { bigint: true });
    expect(first).toEqual({
      hash: puts[0]!.hash,
      path: path.join(dir, puts[0]!.hash),
      bytes: 64,
      mtimeMs: Number(st.mtimeMs),
      mtimeNs: st.mtimeNs,
      dev: st.dev,
      ino: st.ino,
      nlink: 1n,
    });
  });

  it("lists a missing directory as empty and refuses one that is not owner-only", async () => {
    expect(await listCanonicalBlobs(dir)).toEqual([]);
    fs.mkdirSync(dir, { mode: 0o777 });
    fs.chmodSync(dir, 0o777);
    await expect(listCanonicalBlobs(dir)).rejects.toBeInstanceOf(SecureFsError);
  });
});

describe("removeCanonicalBlob", () => {
  it("removes the listed blob and nothing else", async () => {
    const store = new BlobStore(dir);
    const [gone, kept] = await Promise.all([store.put(image(1)), store.put(image(2))]);
    const entry = (await listCanonicalBlobs(dir)).find((e) => e.hash === gone.hash)!;
    expect(await removeCanonicalBlob(entry)).toEqual({ removed: true });
    expect(fs.existsSync(gone.path)).toBe(false);
    expect(fs.readFileSync(kept.path)).toEqual(image(2));
    expect(fs.readdirSync(dir)).toEqual([kept.hash]);
  });

  it("keeps a blob rewritten since it was listed, and one that vanished", async () => {
    const store = new BlobStore(dir);
    const blob = await store.put(image(1));
    const [entry] = await listCanonicalBlobs(dir);
    fs.rmSync(blob.path);
    fs.writeFileSync(blob.path, image(1), { mode: 0o600 });
    expect(await removeCanonicalBlob(entry!)).toEqual({ removed: false, reason: "blob_changed" });
    expect(fs.existsSync(blob.path)).toBe(true);
    fs.rmSync(blob.path);
    expect(await removeCanonicalBlob(entry!)).toEqual({ removed: false, reason: "blob_disappeared" });
  });

  it("keeps a blob that gained a link", async () => {
    const blob = await new BlobStore(dir).put(image(1));
    const [entry] = await listCanonicalBlobs(dir);
    fs.linkSync(blob.path, path.join(tmp.path, "hard"));
    expect(await removeCanonicalBlob(entry!)).toEqual({ removed: false, reason: "blob_not_plain_file" });
    expect(fs.existsSync(blob.path)).toBe(true);
  });

  it("keeps it when the veto says a reference appeared, and puts back a file swapped in after the check", async () => {
    const blob = await new BlobStore(dir).put(image(1));
    const [entry] = await listCanonicalBlobs(dir);
    expect(await removeCanonicalBlob(entry!, { beforeUnlink: async () => false })).toEqual({ removed: false, reason: "blob_reference_evidence_changed" });
    expect(fs.existsSync(blob.path)).toBe(true);

    // The swap lands between the check and the detach: the detached file is not the listed one.
    const swapped = await removeCanonicalBlob(entry!, {
      beforeUnlink: async () => {
        fs.rmSync(blob.path);
        fs.writeFileSync(blob.path, "another file under the same name", { mode: 0o600 });
        return true;
      },
    });
    expect(swapped).toEqual({ removed: false, reason: "blob_changed" });
    expect(fs.readFileSync(blob.path, "utf8")).toBe("another file under the same name");
    expect(fs.readdirSync(dir)).toEqual([blob.hash]);
  });
});
