// ContentDigest: the SHA-256 that verified writes feed on the thread pool. Its digest equals
// node:crypto's over the same bytes written in any chunking (across the 64 KiB read-back
// slices and 256 KiB write pieces), starts afresh after each hex(), and is used by one write
// at a time: a second write or a hex() while one is in flight is refused, and an object the
// addon did not make is refused.
import { createHash } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SecureDir, type SecureFile } from "../../src/index.js";
import { ContentDigest } from "../../src/fs/index.js";
import binding from "../../src/native/binding.cjs";
import { asyncCodeOf, codeOf } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
let root: SecureDir;
let n = 0;

beforeAll(() => {
  tmp = makeTempDir("gjc-digest-");
  root = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
});
afterAll(() => {
  root.close();
  tmp.remove();
});

function fresh(): SecureFile {
  n += 1;
  return root.openFile(`f${n}`, { write: true, create: "exclusive" });
}

function pattern(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) out[i] = (i * 151 + seed * 13 + (i >> 11)) & 0xff;
  return out;
}

const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/** Writes `chunks` back to back through verified writes feeding `digest`. */
async function writeAll(file: SecureFile, chunks: readonly Buffer[], digest: ContentDigest): Promise<void> {
  let position = 0;
  for (const chunk of chunks) {
    expect(await file.writeVerifiedAsync(chunk, position, digest)).toBe(true);
    position += chunk.byteLength;
  }
}

describe("ContentDigest with verified writes", () => {
  it("equals node:crypto's SHA-256 of the bytes, whatever the chunking", async () => {
    const chunkings = [
      [pattern(1, 1)],
      [pattern(64 * 1024, 2), pattern(64 * 1024 + 1, 3)],
      [pattern(256 * 1024 + 17, 4), pattern(3, 5), pattern(700_001, 6)],
      [pattern(2 * 1024 * 1024 + 5, 7)],
    ];
    for (const chunks of chunkings) {
      const file = fresh();
      const digest = ContentDigest.create();
      try {
        await writeAll(file, chunks, digest);
        expect(digest.hex(), `${chunks.length} chunks`).toBe(sha256(Buffer.concat(chunks)));
      } finally {
        file.close();
      }
    }
  });

  it("an empty write gives the digest of nothing, and hex() starts the digest afresh", async () => {
    const file = fresh();
    const digest = ContentDigest.create();
    try {
      expect(await file.writeVerifiedAsync(Buffer.alloc(0), 0, digest)).toBe(true);
      expect(digest.hex()).toBe(sha256(Buffer.alloc(0)));
      const bytes = pattern(1000, 8);
      expect(await file.writeVerifiedAsync(bytes, 0, digest)).toBe(true);
      expect(digest.hex()).toBe(sha256(bytes));
      expect(digest.hex()).toBe(sha256(Buffer.alloc(0)));
    } finally {
      file.close();
    }
  });

  it("a write without a digest adds nothing to one", async () => {
    const file = fresh();
    const digest = ContentDigest.create();
    try {
      expect(await file.writeVerifiedAsync(pattern(10, 9), 0)).toBe(true);
      expect(await file.writeVerifiedAsync(pattern(20, 10), 10, digest)).toBe(true);
      expect(digest.hex()).toBe(sha256(pattern(20, 10)));
    } finally {
      file.close();
    }
  });
});

describe("ContentDigest: one write at a time, and only the addon's own", () => {
  it("refuses a second write and hex() while a write is feeding it, and is usable again once it settles", async () => {
    const file = fresh();
    const other = fresh();
    const digest = ContentDigest.create();
    try {
      const first = pattern(3 * 1024 * 1024, 11);
      const inFlight = file.writeVerifiedAsync(first, 0, digest);
      expect(await asyncCodeOf(() => other.writeVerifiedAsync(pattern(10, 12), 0, digest))).toBe("invalid_argument");
      expect(codeOf(() => digest.hex())).toBe("invalid_argument");
      expect(await inFlight).toBe(true);
      // The refused write wrote nothing and fed nothing.
      expect(other.stat().size).toBe(0);
      expect(digest.hex()).toBe(sha256(first));
    } finally {
      file.close();
      other.close();
    }
  });

  it("a digest argument that is not a ContentDigest is invalid_argument", async () => {
    const file = fresh();
    try {
      const fake = {} as unknown as ContentDigest;
      expect(await asyncCodeOf(() => file.writeVerifiedAsync(pattern(4, 13), 0, fake))).toBe("invalid_argument");
      expect(file.stat().size).toBe(0);
    } finally {
      file.close();
    }
  });

  it("the addon refuses digest objects it did not make, and other objects, at once", () => {
    // A NativeDigest made with `new` carries no digest.
    const bare = new (binding.NativeDigest as unknown as new () => object)();
    for (const wrong of [bare, {}, 42, "digest", undefined]) {
      expect(binding.finishDigest(wrong as never)).toMatchObject({ failed: true, code: "invalid_argument" });
    }
    expect(binding.finishDigest(binding.createDigest() as never)).toBe(sha256(Buffer.alloc(0)));
  });
});
