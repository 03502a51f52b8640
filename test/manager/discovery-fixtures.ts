/**
 * Session files for the discovery tests, written with plain node:fs so the listing is checked
 * against bytes no part of this library produced.
 */
import fs from "node:fs";

import { type SessionFileReader, type SessionStorage } from "../../src/index.js";
import { LISTING_INDEX_FILE_NAME } from "../../src/manager/index.js";

/** A JSONL line. */
export function line(record: object): string {
  return `${JSON.stringify(record)}\n`;
}

/** A session header line. */
export function header(fields: { id: string; version?: number | string; cwd?: string; timestamp?: string; [key: string]: unknown }): string {
  return line({ type: "session", ...fields });
}

let entryCounter = 0;

/** A `message` entry line; text is put in a content block list. */
export function message(role: string, text: string): string {
  entryCounter += 1;
  return line({
    type: "message",
    id: entryCounter.toString(16).padStart(8, "0"),
    parentId: null,
    timestamp: "2026-01-01T00:00:00.000Z",
    message: { role, content: [{ type: "text", text }] },
  });
}

/** A `header_patch` line. */
export function headerPatch(patch: { title?: string; titleSource?: "auto" | "user"; cwd?: string }): string {
  return line({ type: "header_patch", patch });
}

/** Messages totalling at least `bytes` bytes (about 1 KiB each). */
export function filler(bytes: number, role = "assistant"): string {
  const parts: string[] = [];
  let total = 0;
  while (total < bytes) {
    const text = message(role, "x".repeat(900));
    parts.push(text);
    total += Buffer.byteLength(text);
  }
  return parts.join("");
}

/** Writes `content` at `file` and sets its mtime (seconds since the epoch). */
export function writeAt(file: string, content: string | Buffer, mtimeSeconds: number): void {
  fs.writeFileSync(file, content);
  fs.utimesSync(file, mtimeSeconds, mtimeSeconds);
}

/** Read calls a {@link countingStorage} saw. */
export interface ReadLog {
  /** the first read of each opened file: its prefix */
  prefixes: { path: string; maxBytes: number }[];
  /** every later read: `end` is where the bytes read stop, `got` how many there were */
  tails: { path: string; maxBytes: number; end: number; got: number }[];
}

/**
 * Wraps a real storage and records every read made through the readers it opens, so tests
 * can check what the listing read (and that it never asked for more than a bounded amount).
 */
export function countingStorage(inner: SessionStorage): { storage: SessionStorage; log: ReadLog } {
  const log: ReadLog = { prefixes: [], tails: [] };
  const overrides: Partial<SessionStorage> = {
    openReaderSync(path: string): SessionFileReader {
      const reader = inner.openReaderSync(path);
      // The listing index is not a session file: its reads are not what these logs count.
      if (path.endsWith(LISTING_INDEX_FILE_NAME)) return reader;
      let first = true;
      return {
        path: reader.path,
        stat: reader.stat,
        readSync(buffer: Uint8Array, position: number): number {
          const got = reader.readSync(buffer, position);
          if (first) log.prefixes.push({ path, maxBytes: buffer.length });
          else log.tails.push({ path, maxBytes: buffer.length, end: position + got, got });
          first = false;
          return got;
        },
        close: () => reader.close(),
      };
    },
  };
  // A proxy keeps `instanceof` (the listing treats disk storages specially) and binds the
  // other methods to the real object, whose private fields they use.
  const storage = new Proxy(inner, {
    get(target, key) {
      const override = (overrides as Record<PropertyKey, unknown>)[key];
      if (override !== undefined) return override;
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { storage, log };
}
