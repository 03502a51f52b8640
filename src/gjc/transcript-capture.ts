/**
 * A bounded capture of one transcript without write authority: the file is held by one no-follow
 * descriptor and read in ranges, never whole (up to 2 GiB + 1 MiB), every line checked to be a
 * JSON record under a session header; its identity (stat tuple and SHA-256) is fixed at capture,
 * and each later pass, or an explicit revalidation, proves the file is still those bytes.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";

import { GjcFaceError } from "./face-errors.js";
import { canonicalPathOf, sameIdentity, type ResumeSessionIdentity, type ResumeTailError } from "./strict-open.js";

/** The largest transcript a capture takes. */
export const CAPTURE_MAX_BYTES = 2 * 1024 * 1024 * 1024 + 1024 * 1024;

const CHUNK_BYTES = 1024 * 1024;

/** A captured transcript; see the module comment. */
export interface TranscriptSnapshotHandle {
  readonly sourcePath: string;
  readonly identity: ResumeSessionIdentity;
  /** Delivers each line without its newline; `false` from `visit` stops. Re-checks the identity after a full pass. @returns whether it ran to the end @throws GjcFaceError `prepared_session_changed` */
  forEachLine(visit: (line: string) => boolean | void): boolean;
  /** The stat of the last pass. */
  getLastReadStat(): fs.BigIntStats;
  /** Whether the file is still the captured bytes. */
  revalidate(): { kind: "valid" } | { kind: "error"; reason: "identity-mismatch" | "missing" | "read-failed" };
  /** The captured bytes, proven to be them. @throws GjcFaceError `prepared_session_changed` */
  materialize(): Uint8Array;
  /** Lets the descriptor go. Idempotent. */
  close(): void;
}

/** GJC's name for a captured transcript. */
export type CapturedSessionTranscriptSnapshot = TranscriptSnapshotHandle;

/** One pass over the held file: every chunk to `chunk`, hashed; the stat before and after must agree with the path's. */
function pass(fd: number, file: string, chunk: (bytes: Buffer) => boolean): { sha256: string; stat: fs.BigIntStats; complete: boolean } {
  const stat = fs.fstatSync(fd, { bigint: true });
  const hash = createHash("sha256");
  const buffer = Buffer.alloc(CHUNK_BYTES);
  let at = 0;
  let complete = true;
  for (;;) {
    const read = fs.readSync(fd, buffer, 0, CHUNK_BYTES, at);
    if (read === 0) break;
    at += read;
    const bytes = buffer.subarray(0, read);
    hash.update(bytes);
    if (!chunk(bytes)) {
      complete = false;
      break;
    }
  }
  const after = fs.fstatSync(fd, { bigint: true });
  const byPath = fs.lstatSync(file, { bigint: true });
  const same = (a: fs.BigIntStats, b: fs.BigIntStats) =>
    a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
  if (!same(stat, after) || !same(stat, byPath) || (complete && BigInt(at) !== stat.size))
    throw new GjcFaceError("prepared_session_changed", "The captured transcript changed while it was read.");
  return { sha256: hash.digest("hex"), stat, complete };
}

/** Splits chunks into lines (without their newline) for `visit`; the last line may lack one. */
function lineSplitter(visit: (line: string) => boolean | void): { chunk: (bytes: Buffer) => boolean; end: () => boolean } {
  let pending: Buffer[] = [];
  let stopped = false;
  const emit = (parts: Buffer[]): boolean => {
    const line = Buffer.concat(parts).toString("utf8");
    if (line.length > 0 && visit(line) === false) stopped = true;
    return !stopped;
  };
  return {
    chunk(bytes) {
      let start = 0;
      for (let newline = bytes.indexOf(0x0a); newline !== -1; newline = bytes.indexOf(0x0a, start)) {
        const parts = [...pending, bytes.subarray(start, newline)];
        pending = [];
        start = newline + 1;
        if (!emit(parts)) return false;
      }
      if (start < bytes.length) pending.push(Buffer.from(bytes.subarray(start)));
      return true;
    },
    end: () => stopped || pending.length === 0 || emit(pending),
  };
}

/** Captures `filePath`; see the module comment. */
export function captureTranscript(filePath: string): { kind: "captured"; snapshot: TranscriptSnapshotHandle } | ResumeTailError {
  const file = canonicalPathOf(filePath);
  let fd: number;
  try {
    const st = fs.lstatSync(file, { bigint: true });
    if (!st.isFile()) return { kind: "error", reason: "read-failed" };
    if (st.size > BigInt(CAPTURE_MAX_BYTES)) return { kind: "error", reason: "oversized", size: Number(st.size) };
    const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
    fd = fs.openSync(file, O_RDONLY | (O_NOFOLLOW ?? 0) | (O_NONBLOCK ?? 0));
  } catch (error) {
    return { kind: "error", reason: (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "read-failed" };
  }
  let sessionId: string | undefined;
  let malformed = false;
  let first: ReturnType<typeof pass>;
  try {
    const lines = lineSplitter((line) => {
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch {
        malformed = true;
        return false;
      }
      if (sessionId === undefined) {
        const header = record as { type?: unknown; id?: unknown } | null;
        if (header?.type !== "session" || typeof header.id !== "string") malformed = true;
        else sessionId = header.id;
        return !malformed;
      }
      return true;
    });
    first = pass(fd, file, lines.chunk);
    lines.end();
  } catch (error) {
    fs.closeSync(fd);
    return { kind: "error", reason: error instanceof GjcFaceError ? "unstable" : "read-failed" };
  }
  if (malformed || sessionId === undefined || !first.complete) {
    fs.closeSync(fd);
    return { kind: "error", reason: "malformed" };
  }
  const { stat } = first;
  const identity: ResumeSessionIdentity = {
    canonicalPath: file,
    sessionId,
    dev: stat.dev,
    ino: stat.ino,
    nlink: stat.nlink,
    size: Number(stat.size),
    mtimeMs: Number(stat.mtimeMs),
    mtimeNs: stat.mtimeNs,
    ctimeNs: stat.ctimeNs,
    sha256: first.sha256,
  };
  let lastStat = stat;
  let open = true;
  const held = (): number => {
    if (!open) throw new GjcFaceError("prepared_session_changed", "The captured transcript was closed.");
    return fd;
  };
  const proven = (result: ReturnType<typeof pass>): void => {
    lastStat = result.stat;
    const now = {
      ...identity,
      dev: result.stat.dev,
      ino: result.stat.ino,
      nlink: result.stat.nlink,
      size: Number(result.stat.size),
      mtimeMs: Number(result.stat.mtimeMs),
      mtimeNs: result.stat.mtimeNs,
      ctimeNs: result.stat.ctimeNs,
      sha256: result.sha256,
    };
    if (result.complete && !sameIdentity(now, identity))
      throw new GjcFaceError("prepared_session_changed", "The captured transcript changed since it was captured.");
  };
  const snapshot: TranscriptSnapshotHandle = {
    sourcePath: file,
    identity,
    forEachLine(visit) {
      const lines = lineSplitter(visit);
      const result = pass(held(), file, lines.chunk);
      proven(result);
      return result.complete && lines.end();
    },
    getLastReadStat: () => lastStat,
    revalidate() {
      try {
        proven(pass(held(), file, () => true));
        return { kind: "valid" };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return { kind: "error", reason: "missing" };
        return { kind: "error", reason: error instanceof GjcFaceError ? "identity-mismatch" : "read-failed" };
      }
    },
    materialize() {
      const parts: Buffer[] = [];
      proven(pass(held(), file, (bytes) => (parts.push(Buffer.from(bytes)), true)));
      return new Uint8Array(Buffer.concat(parts));
    },
    close() {
      if (!open) return;
      open = false;
      fs.closeSync(fd);
    },
  };
  return { kind: "captured", snapshot };
}
