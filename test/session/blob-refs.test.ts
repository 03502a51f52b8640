import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  BLOB_EXTERNALIZE_THRESHOLD,
  BLOB_REF_PREFIX,
  type BlobSink,
  externalizeImageBlobs,
  isImageDataUrl,
  parseBlobRef,
  resolveBlobRefs,
} from "../../src/session/blob-refs.js";
import { pngDataUrl } from "../helpers/images.js";

const FIXTURE = new URL("../fixtures/peer-sessions/pi-mono__compact-root__v1-inline-image-excerpt.jsonl", import.meta.url);

function memoryStore(): { blobs: Map<string, Buffer>; sink: BlobSink } {
  const blobs = new Map<string, Buffer>();
  return { blobs, sink: (bytes, digest) => void blobs.set(digest, Buffer.from(bytes)) };
}

interface ImageBlock {
  type: string;
  data?: string;
}

function imageEntry(data: string, type: "message" | "custom_message" = "message"): object {
  const content = [
    { type: "text", text: "see image" },
    { type: "image", mimeType: "image/png", data },
  ];
  return type === "message"
    ? { type, id: "img00001", parentId: null, timestamp: "t", message: { role: "user", content } }
    : { type, id: "img00002", parentId: null, timestamp: "t", customType: "x", display: true, content };
}

function blocksOf(entry: object): ImageBlock[] {
  const record = entry as { message?: { content: ImageBlock[] }; content?: ImageBlock[] };
  return (record.message?.content ?? record.content)!;
}

const largeImage = Buffer.alloc(4096, 7).toString("base64");

describe("parseBlobRef", () => {
  const digest = "0123456789abcdef".repeat(4);

  it("accepts exactly blob:sha256: followed by 64 lowercase hex digits", () => {
    expect(parseBlobRef(`${BLOB_REF_PREFIX}${digest}`)).toBe(digest);
  });

  it.each([
    ["upper-case hex", `blob:sha256:${digest.toUpperCase()}`],
    ["63 digits", `blob:sha256:${digest.slice(1)}`],
    ["65 digits", `blob:sha256:${digest}0`],
    ["leading space", ` blob:sha256:${digest}`],
    ["trailing newline", `blob:sha256:${digest}\n`],
    ["other algorithm", `blob:sha512:${digest}`],
    ["upper-case prefix", `BLOB:sha256:${digest}`],
    ["non-hex digit", `blob:sha256:${digest.slice(0, 63)}g`],
    ["empty", ""],
  ])("rejects %s", (_name, text) => {
    expect(parseBlobRef(text)).toBeNull();
  });

  it("rejects non-strings", () => {
    expect(parseBlobRef(undefined)).toBeNull();
    expect(parseBlobRef(42)).toBeNull();
    expect(parseBlobRef({ ref: `blob:sha256:${digest}` })).toBeNull();
  });
});

describe("externalizeImageBlobs", () => {
  it("round-trips the inline image of the pi-mono fixture through a blob", () => {
    const lines = readFileSync(FIXTURE, "utf8")
      .split("\n")
      .filter((line) => line.length > 0);
    const entry = JSON.parse(lines[1]!) as object;
    const original = JSON.stringify(entry);
    const inline = blocksOf(entry).find((block) => block.type === "image")!.data!;
    expect(inline.length).toBeGreaterThan(BLOB_EXTERNALIZE_THRESHOLD);

    const { blobs, sink } = memoryStore();
    const externalized = externalizeImageBlobs(entry, sink);
    expect(JSON.stringify(entry)).toBe(original);
    const ref = blocksOf(externalized).find((block) => block.type === "image")!.data!;
    const digest = parseBlobRef(ref)!;
    const bytes = Buffer.from(inline, "base64");
    expect(digest).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(blobs.get(digest)?.equals(bytes)).toBe(true);
    expect(JSON.stringify(externalized).length).toBeLessThan(original.length - inline.length + 100);

    const { entries, unresolved } = resolveBlobRefs([externalized], (hex) => blobs.get(hex));
    expect(unresolved).toEqual([]);
    expect(JSON.stringify(entries[0])).toBe(original);
  });

  it("externalizes custom_message image blocks too", () => {
    const entry = imageEntry(largeImage, "custom_message");
    const before = JSON.stringify(entry);
    const { blobs, sink } = memoryStore();
    const out = externalizeImageBlobs(entry, sink);
    expect(JSON.stringify(entry)).toBe(before);
    expect(parseBlobRef(blocksOf(out)[1]!.data)).not.toBeNull();
    expect(blocksOf(out)[0]).toBe(blocksOf(entry)[0]);
    expect(blobs.size).toBe(1);
  });

  it("leaves images under the threshold inline and returns the same entry", () => {
    const small = Buffer.alloc(700, 1).toString("base64");
    expect(small.length).toBeLessThan(BLOB_EXTERNALIZE_THRESHOLD);
    const entry = imageEntry(small);
    const { blobs, sink } = memoryStore();
    expect(externalizeImageBlobs(entry, sink)).toBe(entry);
    expect(blobs.size).toBe(0);
  });

  it("externalizes at exactly the threshold", () => {
    const exact = "A".repeat(BLOB_EXTERNALIZE_THRESHOLD);
    const { sink } = memoryStore();
    expect(parseBlobRef(blocksOf(externalizeImageBlobs(imageEntry(exact), sink))[1]!.data)).not.toBeNull();
  });

  it("keeps non-canonical base64 inline, because it would not round-trip", () => {
    const wrapped = largeImage.replace(/(.{76})/g, "$1\n");
    const urlSafe = Buffer.alloc(3000, 0xfb).toString("base64url");
    const { blobs, sink } = memoryStore();
    for (const data of [wrapped, urlSafe]) {
      const entry = imageEntry(data);
      expect(externalizeImageBlobs(entry, sink)).toBe(entry);
    }
    expect(blobs.size).toBe(0);
  });

  it("ignores entries of other types and image-like blocks outside content arrays", () => {
    const { blobs, sink } = memoryStore();
    const custom = { type: "custom", id: "c", data: { type: "image", data: largeImage } };
    const nested = {
      type: "message",
      message: { role: "user", content: [{ type: "text", inner: { type: "image", data: largeImage } }] },
    };
    expect(externalizeImageBlobs(custom, sink)).toBe(custom);
    expect(externalizeImageBlobs(nested, sink)).toBe(nested);
    expect(blobs.size).toBe(0);
  });
});

describe("resolveBlobRefs", () => {
  it("reports a missing blob and keeps the reference", () => {
    const { sink } = memoryStore();
    const stored = externalizeImageBlobs(imageEntry(largeImage), sink);
    const ref = blocksOf(stored)[1]!.data!;
    const { entries, unresolved } = resolveBlobRefs([stored], () => undefined);
    expect(entries[0]).toBe(stored);
    expect(blocksOf(entries[0]!)[1]!.data).toBe(ref);
    expect(unresolved).toEqual([{ entryId: "img00001", sha256: parseBlobRef(ref), reason: "missing" }]);
  });

  it("reports stored bytes that no longer match their digest", () => {
    const { blobs, sink } = memoryStore();
    const stored = externalizeImageBlobs(imageEntry(largeImage), sink);
    const [digest] = [...blobs.keys()];
    const { entries, unresolved } = resolveBlobRefs([stored], () => Buffer.from("tampered"));
    expect(unresolved).toEqual([{ entryId: "img00001", sha256: digest, reason: "digest_mismatch" }]);
    expect(entries[0]).toBe(stored);
  });

  it("passes entries without references through as the same objects", () => {
    const plain = { type: "message", message: { role: "user", content: "hi" } };
    const lookups: string[] = [];
    const { entries } = resolveBlobRefs([plain], (hex) => {
      lookups.push(hex);
      return undefined;
    });
    expect(entries[0]).toBe(plain);
    expect(lookups).toEqual([]);
  });

  it("accepts any Uint8Array from the lookup", () => {
    const { blobs, sink } = memoryStore();
    const stored = externalizeImageBlobs(imageEntry(largeImage, "custom_message"), sink);
    const { entries } = resolveBlobRefs([stored], (hex) => new Uint8Array(blobs.get(hex)!));
    expect(blocksOf(entries[0]!)[1]!.data).toBe(largeImage);
  });
});

describe("image data URLs", () => {
  const screenshot = pngDataUrl(2 * 1024 * 1024, 3);
  const diagram = pngDataUrl(1536 * 1024, 4);

  /** An assistant message whose provider payload holds the screenshot as a string and the diagram as an object's `url`. */
  function assistantWithPayload(): Record<string, unknown> {
    return {
      type: "message",
      id: "asst0001",
      parentId: "user0001",
      timestamp: "2026-05-01T10:00:02.000Z",
      message: {
        role: "assistant",
        content: [{ type: "text", text: "The screenshot shows a failing build." }],
        providerPayload: {
          type: "openaiResponsesHistory",
          provider: "openai",
          items: [
            {
              type: "message",
              role: "user",
              content: [
                { type: "input_text", text: "what fails?" },
                { type: "input_image", detail: "auto", image_url: screenshot },
              ],
            },
            { type: "message", role: "user", content: [{ type: "input_image", image_url: { url: diagram, detail: "high" } }] },
          ],
        },
        timestamp: 2,
      },
    };
  }

  const urlsOf = (entry: unknown): string[] => [...JSON.stringify(entry).matchAll(/"(data:image\/[^"]*|blob:sha256:[0-9a-f]{64})"/g)].map((m) => m[1]!);

  it("recognises data:image/<type>;base64, URLs only", () => {
    expect(isImageDataUrl(screenshot)).toBe(true);
    expect(isImageDataUrl("data:image/svg+xml;base64,PHN2Zz4=")).toBe(true);
    for (const other of ["data:text/plain;base64,aGk=", "data:image/svg+xml,<svg/>", "https://example.com/a.png", "DATA:IMAGE/PNG;BASE64,AA==", ""]) {
      expect(isImageDataUrl(other)).toBe(false);
    }
  });

  it("moves both URLs of a provider payload into blobs holding their UTF-8, copy-on-write, and resolves them back byte for byte", () => {
    const entry = assistantWithPayload();
    const before = JSON.stringify(entry);
    const { blobs, sink } = memoryStore();
    const stored = externalizeImageBlobs(entry, sink);
    expect(JSON.stringify(entry)).toBe(before);
    const refs = urlsOf(stored);
    expect(refs.map(parseBlobRef)).toEqual([createHash("sha256").update(screenshot).digest("hex"), createHash("sha256").update(diagram).digest("hex")]);
    expect(blobs.get(parseBlobRef(refs[0])!)?.toString("utf8")).toBe(screenshot);
    expect(blobs.get(parseBlobRef(refs[1])!)?.toString("utf8")).toBe(diagram);
    expect(JSON.stringify(stored).length).toBeLessThan(2000);
    // Only the path to each URL is copied.
    const message = (stored as { message: { content: unknown; providerPayload: { items: { content: unknown[] }[] } } }).message;
    const original = (entry as { message: { content: unknown; providerPayload: { items: { content: unknown[] }[] } } }).message;
    expect(message.content).toBe(original.content);
    expect(message.providerPayload.items[0]!.content[0]).toBe(original.providerPayload.items[0]!.content[0]);

    const { entries, unresolved } = resolveBlobRefs([stored], (hex) => blobs.get(hex));
    expect(unresolved).toEqual([]);
    expect(JSON.stringify(entries[0])).toBe(before);
  });

  it("externalizes a URL in a custom_message's details at any depth, whatever its length", () => {
    const small = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";
    const entry = {
      type: "custom_message",
      id: "cust0001",
      parentId: null,
      timestamp: "t",
      customType: "preview",
      display: true,
      content: "rendered",
      details: { frames: [{ image_url: small }, { nested: { image_url: { url: diagram } } }] },
    };
    const { blobs, sink } = memoryStore();
    const stored = externalizeImageBlobs(entry, sink);
    expect(urlsOf(stored).every((url) => parseBlobRef(url) !== null)).toBe(true);
    expect(blobs.size).toBe(2);
    expect(resolveBlobRefs([stored], (hex) => blobs.get(hex)).entries[0]).toEqual(entry);
  });

  it("leaves other strings alone: other keys, other URLs, fields persistence drops; an entry without any comes back as itself", () => {
    const entry = {
      type: "message",
      id: "asst0002",
      message: {
        role: "assistant",
        content: [{ type: "text", text: screenshot }],
        providerPayload: {
          url: screenshot,
          data: screenshot,
          image_url: "https://example.com/cat.png",
          other: { image_url: { url: "data:text/plain;base64,aGk=", href: screenshot } },
          partialJson: { image_url: screenshot },
          jsonlEvents: [{ image_url: { url: screenshot } }],
        },
      },
    };
    const { blobs, sink } = memoryStore();
    expect(externalizeImageBlobs(entry, sink)).toBe(entry);
    expect(blobs.size).toBe(0);
  });

  it("keeps a __proto__ field an own field of the copy", () => {
    const entry = JSON.parse(`{"type":"custom","id":"c1","data":{"__proto__":{"image_url":"${diagram}"},"kept":1}}`) as { data: Record<string, unknown> };
    const { blobs, sink } = memoryStore();
    const stored = externalizeImageBlobs(entry, sink);
    expect(Object.getPrototypeOf(stored.data)).toBe(Object.prototype);
    expect(Object.keys(stored.data)).toEqual(["__proto__", "kept"]);
    expect(JSON.stringify(resolveBlobRefs([stored], (hex) => blobs.get(hex)).entries[0])).toBe(JSON.stringify(entry));
  });

  it("keeps and reports a reference whose blob is missing or holds other bytes", () => {
    const { blobs, sink } = memoryStore();
    const stored = externalizeImageBlobs(assistantWithPayload(), sink);
    const [first, second] = urlsOf(stored).map((ref) => parseBlobRef(ref)!);
    const { entries, unresolved } = resolveBlobRefs([stored], (hex) => (hex === first ? undefined : Buffer.from("not the image")));
    expect(entries[0]).toBe(stored);
    expect(unresolved).toEqual([
      { entryId: "asst0001", sha256: first, reason: "missing" },
      { entryId: "asst0001", sha256: second, reason: "digest_mismatch" },
    ]);
    expect(blobs.size).toBe(2);
  });
});
